// Replays checked-in fuzz inputs through a libFuzzer target's entry point
// without libFuzzer: the unit-test build links every fuzz/<target>.cpp, its
// entry point renamed atoll_replay_<target> (tests/CMakeLists.txt), into one
// program with this main, so every build (and CI's ASan + UBSan build) runs
// the inputs that once crashed (fuzz/regressions/) and the seed corpus
// (fuzz/corpus/). A crash, sanitizer report or uncaught exception fails the
// ctest; the input being run is printed first, so the failing file is named.
//   fuzz_replay <target> PATH...   (files, or folders read recursively)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using EntryPoint = int (*)(const uint8_t* data, size_t size);

// ATOLL_FUZZ_REPLAY_TARGETS is X(fuzz_config)X(fuzz_npy)..., from CMake.
#define X(target) extern "C" int atoll_replay_##target(const uint8_t* data, size_t size);
ATOLL_FUZZ_REPLAY_TARGETS
#undef X

namespace {

namespace fs = std::filesystem;

struct Target {
  const char* name;
  EntryPoint entry;
};
#define X(target) {#target, &atoll_replay_##target},
const Target kTargets[] = {ATOLL_FUZZ_REPLAY_TARGETS};
#undef X

void replay(EntryPoint entry, const fs::path& file) {
  std::printf("replaying %s\n", file.c_str());
  std::fflush(stdout);
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  // A copy in a buffer of exactly the input's size, as libFuzzer passes it,
  // so ASan catches a read one past the end.
  std::vector<uint8_t> exact(bytes.begin(), bytes.end());
  entry(exact.data(), exact.size());
}

}  // namespace

int main(int argc, char** argv) {
  EntryPoint entry = nullptr;
  if (argc >= 2)
    for (const Target& t : kTargets)
      if (std::string(argv[1]) == t.name) entry = t.entry;
  if (entry == nullptr) {
    std::fprintf(stderr, "usage: fuzz_replay TARGET PATH...; targets:");
    for (const Target& t : kTargets) std::fprintf(stderr, " %s", t.name);
    std::fprintf(stderr, "\n");
    return 1;
  }
  int replayed = 0;
  for (int i = 2; i < argc; ++i) {
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
      replay(entry, f);
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
