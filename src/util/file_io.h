// Whole-file reads and atomic, durable writes (data files, checkpoints,
// reports, RESULTS.md).
//
// Thread-safety: functions only; two writers of the same path race.
#pragma once

#include <string>

namespace atl {

// Reads a whole file; throws naming the path if it cannot be read.
std::string read_file_bytes(const std::string& path);

// Writes to a unique temporary name in the same folder (`<path>.tmp.XXXXXX`,
// created exclusively, never through a symlink), fsyncs it, renames it over
// `path` and fsyncs the folder, so readers never see a half-written file and
// a crash leaves the old file or the new one. Creates the parent folder (and
// fsyncs the folders that gained an entry).
void write_file_atomic(const std::string& path, const std::string& bytes);

// For files written in place (appended logs): fsyncs a file's data,
// whichever descriptor wrote them (it is opened again, never through a
// symlink), and a folder's entries, so they survive a crash. Throw naming
// the path.
void sync_file(const std::string& path);
void sync_folder(const std::string& folder);

}  // namespace atl
