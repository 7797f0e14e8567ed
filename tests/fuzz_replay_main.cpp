// Replays checked-in fuzz inputs through a libFuzzer target's entry point
// without libFuzzer: the unit-test build links each fuzz/<target>.cpp with
// this main, so every build (and CI's ASan + UBSan build) runs the inputs
// that once crashed (fuzz/regressions/) and the seed corpus (fuzz/corpus/).
// A crash, sanitizer report or uncaught exception fails the ctest; the input
// being run is printed first, so the failing file is named.
//   fuzz_replay_<target> PATH...   (files, or folders read recursively)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

void replay(const fs::path& file) {
  std::printf("replaying %s\n", file.c_str());
  std::fflush(stdout);
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  // A copy in a buffer of exactly the input's size, as libFuzzer passes it,
  // so ASan catches a read one past the end.
  std::vector<uint8_t> exact(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(exact.data(), exact.size());
}

}  // namespace

int main(int argc, char** argv) {
  int replayed = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg(argv[i]);
    if (!fs::exists(arg)) {
      std::fprintf(stderr, "fuzz replay: %s does not exist\n", argv[i]);
      return 1;
    }
    std::vector<fs::path> files;
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::recursive_directory_iterator(arg))
        if (entry.is_regular_file()) files.push_back(entry.path());
    } else {
      files.push_back(arg);
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      replay(f);
      ++replayed;
    }
  }
  if (replayed == 0) {
    std::fprintf(stderr, "fuzz replay: no inputs given\n");
    return 1;
  }
  std::printf("fuzz replay: %d inputs, none failed\n", replayed);
  return 0;
}
