// Whole-file reads and atomic, durable writes.
#include "util/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace atl {

namespace fs = std::filesystem;

void sync_folder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open folder " + folder + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  // EINVAL: a file system that cannot sync folders (it has nothing to sync).
  if (rc != 0 && err != EINVAL) throw std::runtime_error("cannot flush folder " + folder + ": " + std::strerror(err));
}

void sync_file(const std::string& path) {
  // fsync flushes the file's data whichever descriptor wrote them.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path + " to flush it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("cannot flush " + path + ": " + std::strerror(err));
}

namespace {

// create_directories, then an fsync of the parent of each folder it made,
// so the new folders' names are durable before files in them are relied on.
void create_folders(const fs::path& folder) {
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = folder; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(folder, ec);
  if (ec) throw std::runtime_error("cannot create folder " + folder.string() + ": " + ec.message());
  for (const fs::path& made : missing) sync_folder(made.has_parent_path() ? made.parent_path().string() : ".");
}

}  // namespace

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error("file not found: " + path);
  if (fs::is_directory(path, ec)) throw std::runtime_error("expected a file but found a folder: " + path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("error while reading " + path);
  return ss.str();
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  create_folders(folder);
  // Same folder as the target so the rename stays on one file system. The
  // data reach the disk (fsync) before the rename, and the rename before we
  // return (fsync of the folder): a crash at any moment leaves either the
  // old file or the new one, never a torn one.
  // A unique temporary name, created exclusively (mkostemp: O_CREAT |
  // O_EXCL, so never through a symlink someone planted, never shared with
  // another writer; O_NOFOLLOW says so again, O_CLOEXEC keeps it from
  // child processes), then given the usual permissions.
  std::string tmp_name = target.string() + ".tmp.XXXXXX";
  const int fd = ::mkostemp(tmp_name.data(), O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw std::runtime_error("cannot write " + tmp_name + ": " + std::strerror(errno));
  const fs::path tmp(tmp_name);
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw std::runtime_error(what + " " + tmp.string() + ": " + why);
  };
  if (::fchmod(fd, 0644) != 0) fail("cannot set the permissions of");
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("error while writing (disk full?)");
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) fail("cannot flush");
  if (::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw std::runtime_error("cannot close " + tmp.string() + ": " + why);
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw std::runtime_error("cannot rename " + tmp.string() + " to " + path + ": " + ec.message());
  }
  sync_folder(folder.string());
}

}  // namespace atl
