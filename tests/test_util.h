// Helpers shared by the tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>

namespace atl::testing {

#ifdef ATOLL_BINARY_DIR
// The atoll CLI of this build, for the tests that start it as a program
// (tests/CMakeLists.txt builds it before them when a test file names kAtoll).
inline const std::string kAtoll = std::string(ATOLL_BINARY_DIR) + "/atoll";
#endif

// Returns the message of the std::invalid_argument `fn` throws ("" if none).
template <typename Fn>
std::string invalid_argument_message(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A whole file as a string ("" if it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A folder's entries (relative paths) and their contents, "(folder)" for a
// folder: equal snapshots mean nothing in it changed.
inline std::map<std::string, std::string> folder_snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    out[std::filesystem::relative(e.path(), dir).string()] = e.is_regular_file() ? read_text(e.path()) : "(folder)";
  return out;
}

// Whether an atomic write of `path` left its temporary file (`<path>.tmp`
// or `<path>.tmp.XXXXXX`, util/file_io.h) beside it.
inline bool temp_file_left(const std::filesystem::path& path) {
  std::error_code ec;
  const std::string prefix = path.filename().string() + ".tmp";
  for (const auto& e : std::filesystem::directory_iterator(path.parent_path(), ec))
    if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
  return false;
}

// A fresh temp folder per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ =
        std::filesystem::temp_directory_path() / ("atoll_test_" + std::to_string(rd()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string str() const { return path_.string(); }
  std::string path(const std::string& name) const { return (path_ / name).string(); }
  std::string operator/(const std::string& name) const { return path(name); }
  // Writes `text` (bytes, unchanged) to `name` and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace atl::testing
