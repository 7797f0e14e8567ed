// Generated data shared by the end-to-end tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "atoll/data.h"
#include "test_util.h"

namespace atl {

// A small prepared text data set (generated, deterministic), made once per
// test process and removed when it exits.
inline const std::string& tiny_text_dir() {
  static const testing::TempDir folder;
  static const std::string dir = [] {
    const std::filesystem::path out = folder.path("tiny_text");
    const char* words[] = {"the", "island", "sends", "a", "small", "update", "over", "slow", "links",
                           "and", "every", "worker", "learns", "from", "its", "shard", "quickly"};
    uint64_t state = 42;
    std::vector<std::string> docs;
    for (int d = 0; d < 40; ++d) {
      std::string doc;
      for (int w = 0; w < 120; ++w) doc += std::string(w ? " " : "") + words[splitmix64(state) % 17];
      docs.push_back(doc + ".");
    }
    prepare_documents(docs, "char", out.string(), "generated");
    return out.string();
  }();
  return dir;
}

}  // namespace atl
