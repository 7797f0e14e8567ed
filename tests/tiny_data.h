// Generated data shared by the end-to-end tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/data.h"
#include "atoll/train.h"
#include "test_util.h"
#include "util/rng.h"

namespace atl {

// A small prepared text data set (generated, deterministic), made once per
// test process and removed when it exits.
inline const std::string& tiny_text_dir() {
  static const testing::TempDir folder;
  static const std::string dir = [] {
    const std::filesystem::path out = folder.path("tiny_text");
    const char* words[] = {"the", "island", "sends",  "a",      "small", "update", "over",  "slow",   "links",
                           "and", "every",  "worker", "learns", "from",  "its",    "shard", "quickly"};
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

// A one-layer GPT on the tiny corpus: 20 steps of 4 x 16 tokens, an
// evaluation every 10, no progress line.
inline Config tiny_config(const std::string& strategy, int64_t workers) {
  Config cfg;
  cfg.data.dataset = "text";
  cfg.data.dir = tiny_text_dir();
  cfg.model.n_layer = 1;
  cfg.model.n_head = 2;
  cfg.model.n_embd = 16;
  cfg.model.block_size = 16;
  cfg.optim.warmup_steps = 2;
  // The learning rates the golden trajectories and the recorded figures were
  // taken with (tests/golden/): pinned here, not left to Config{}'s defaults.
  cfg.optim.lr = 1e-3;
  cfg.optim.min_lr = 1e-4;
  cfg.train.steps = 20;
  cfg.train.batch_size = 4;
  cfg.train.eval_every = 10;
  cfg.train.eval_batches = 2;
  cfg.train.log_every = 5;
  cfg.strategy.name = strategy;
  cfg.strategy.workers = workers;
  cfg.diloco.inner_steps = 5;
  cfg.run.progress = false;
  return cfg;
}

// A finished simulation's metrics events, parsed.
inline std::vector<nlohmann::json> events_of(const RunSummary& s) {
  std::vector<nlohmann::json> out;
  for (const auto& line : s.events) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace atl
