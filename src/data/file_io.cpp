// Whole-file reads and atomic writes shared by the data sources.
#include "atoll/data.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace atl::detail {

namespace fs = std::filesystem;

std::string read_file_bytes(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw std::runtime_error("file not found: " + path);
  if (fs::is_directory(path, ec))
    throw std::runtime_error("expected a file but found a folder: " + path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("error while reading " + path);
  return ss.str();
}

}  // namespace atl::detail

namespace atl {
namespace fs = std::filesystem;

void write_file_atomic(const std::string& path, const std::string& bytes) {
  const fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec)
      throw std::runtime_error("cannot create folder " + target.parent_path().string() + ": " +
                               ec.message());
  }
  // Same folder as the target so the rename stays on one file system.
  const fs::path tmp = target.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)
      throw std::runtime_error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignore;
      fs::remove(tmp, ignore);
      throw std::runtime_error("error while writing " + tmp.string() + " (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignore;
    fs::remove(tmp, ignore);
    throw std::runtime_error("cannot rename " + tmp.string() + " to " + path + ": " +
                             ec.message());
  }
}

}  // namespace atl
