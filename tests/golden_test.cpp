// Golden 20-step trajectories: the train and eval losses of every method of
// the strategy table on the generated data, stored in tests/golden/<name>.json.
// A change to any strategy's math moves them; rewrite one deliberately with
//   ATOLL_UPDATE_GOLDEN=1 build/tests/atoll_tests --gtest_filter='EveryStrategy/GoldenTrajectory.*/<name>'
// (a variant: 'Variants/GoldenTrajectory.*/<name>')
// (without the filter every method's file is rewritten). The tolerance allows
// for BLAS kernels that round differently on another CPU.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "atoll/train.h"
#include "every_strategy.h"
#include "tiny_data.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

// Variants: settings that are no method of the table but change a method's
// math, each with its file in tests/golden/variants/ (MuLoCo: DiLoCo with the
// Muon inner optimizer; streaming_eager: Streaming DiLoCo with eager updates).
bool is_variant(const std::string& name) { return name == "muloco" || name == "streaming_eager"; }

fs::path golden_path(const std::string& method) {
  const fs::path dir = fs::path(ATOLL_SOURCE_DIR) / "tests" / "golden";
  return (is_variant(method) ? dir / "variants" : dir) / (method + ".json");
}

// The run every golden file records; the per-method settings each method's
// mechanism needs within 20 steps are here, and only here.
Config golden_config(const std::string& method) {
  const std::string strategy = method == "muloco" ? "diloco" : method == "streaming_eager" ? "streaming" : method;
  Config cfg = tiny_config(strategy, testing::workers_for(strategy, 3));
  if (method == "muloco") cfg.optim.name = "muon";
  if (method == "streaming_eager") {
    cfg.streaming.eager = true;
    cfg.streaming.overlap = 0;
  }
  cfg.noloco.inner_steps = 5;
  cfg.desloc.param_period = 5;  // moments averaged after steps 10 and 20 (first), 15 (second)
  cfg.desloc.first_moment_factor = 2;
  cfg.desloc.second_moment_factor = 3;
  cfg.palsgd.inner_steps = 5;
  cfg.palsgd.ddp_warmup_steps = 5;
  cfg.streaming.fragment_blocks = 1;  // one block: one fragment
  // streaming's fp4 golden predates codec.requantize_result (on by default
  // since): it pins the exact-mean path; the re-quantized one is tested in
  // compression_test.cpp.
  cfg.codec.requantize_result = false;
  cfg.train.log_every = 1;
  cfg.train.eval_every = 5;
  // The goldens were recorded with the final evaluation on the fixed
  // sample, like the others; the full-split one is tested in evaluation_test.
  cfg.train.final_eval = "sample";
  return cfg;
}

class GoldenTrajectory : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenTrajectory, TwentyStepTrajectoryIsUnchanged) {
  const std::string method = GetParam();
  const fs::path path = golden_path(method);
  const bool update = std::getenv("ATOLL_UPDATE_GOLDEN") != nullptr;
  // Checked before the run, so a new method without its file fails at once.
  if (!update) {
    ASSERT_TRUE(fs::exists(path)) << "strategy '" << method << "' has no golden trajectory: " << path
                                  << " does not exist. Once its math is right, record it deliberately with\n"
                                  << "  ATOLL_UPDATE_GOLDEN=1 build/tests/atoll_tests "
                                  << "--gtest_filter='" << (is_variant(method) ? "Variants" : "EveryStrategy")
                                  << "/GoldenTrajectory.*/" << method << "'\n"
                                  << "and commit the file.";
  }
  nlohmann::json got = nlohmann::json::array();
  for (const auto& line : simulate(golden_config(method)).events) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] == "train") got.push_back({{"step", e["step"]}, {"loss", e["loss"]}});
    if (e["event"] == "eval") got.push_back({{"step", e["step"]}, {"val_loss", e["val_loss"]}});
  }
  if (update) {
    std::ofstream(path) << got.dump(1) << "\n";
    return;
  }
  std::ifstream in(path);
  const nlohmann::json want = nlohmann::json::parse(in);
  ASSERT_EQ(got.size(), want.size()) << method;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]["step"], want[i]["step"]) << method << " entry " << i;
    for (const char* key : {"loss", "val_loss"})
      if (want[i].contains(key)) {
        EXPECT_NEAR(got[i][key].get<double>(), want[i][key].get<double>(), 1e-4)
            << method << " " << key << " at step " << want[i]["step"];
      }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryStrategy, GoldenTrajectory, ::testing::ValuesIn(testing::every_strategy()),
                         testing::method_test_name);
INSTANTIATE_TEST_SUITE_P(Variants, GoldenTrajectory, ::testing::Values("muloco", "streaming_eager"),
                         testing::method_test_name);

}  // namespace
}  // namespace atl
