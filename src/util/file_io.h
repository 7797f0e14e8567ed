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
// created exclusively), fsyncs, then renames over
// `path` and fsyncs the folder, so readers never see a half-written file and
// a crash leaves the old file or the new one. Creates the parent folder.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace atl
