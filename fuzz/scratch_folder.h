// The folder a fuzz target writes its input files into, as the readers it
// fuzzes read files: $ATOLL_FUZZ_TMP (scripts/fuzz makes one and removes it
// at the end, so a crashed run leaves nothing behind), else /dev/shm, one
// folder per fuzzing process, removed when the process exits.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace atl_fuzz {

// <base>/atoll_fuzz_<name>_<pid>/, created on first use.
inline const std::filesystem::path& scratch_folder(const std::string& name) {
  namespace fs = std::filesystem;
  static const fs::path dir = [&] {
    const char* env = std::getenv("ATOLL_FUZZ_TMP");
    const fs::path base = env && *env              ? fs::path(env)
                          : fs::exists("/dev/shm") ? fs::path("/dev/shm")
                                                   : fs::temp_directory_path();
    fs::path d = base / ("atoll_fuzz_" + name + "_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  static const struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } cleanup{dir};
  return dir;
}

// Writes `size` bytes to `path`, or (`present` false) removes it.
inline void put_file(const std::filesystem::path& path, bool present, const uint8_t* data, size_t size) {
  if (!present) {
    std::error_code ec;
    std::filesystem::remove(path, ec);
    return;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace atl_fuzz
