// DES-LOC (strategy/desloc.h): its three averages on their own periods,
// Local SGD when the moments are never averaged, and its rules.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "atoll/setup.h"
#include "atoll/strategy.h"
#include "strategy_harness.h"

namespace atl {
namespace {

using namespace harness;

// Never averaging the moments leaves local Adam with its parameters averaged
// every K_x steps: Local SGD with H = K_x, bit for bit.
TEST(DesLoc, WithoutMomentAveragesItIsLocalSgdBitwise) {
  Config desloc = base_config("desloc", "adamw");
  desloc.desloc.param_period = 3;
  desloc.desloc.first_moment_factor = 0;
  desloc.desloc.second_moment_factor = 0;
  Config local = base_config("localsgd", "adamw");
  local.diloco.inner_steps = 3;
  const auto a = run(desloc, 3, 10, 0.01, own_data);
  const auto b = run(local, 3, 10, 0.01, own_data);
  EXPECT_TRUE(bitwise_equal(a[0], b[0]));
  EXPECT_TRUE(bitwise_equal(a[1], b[1]));
}

// K_x = 2, K_u = 2 x 2 = 4, K_v = 3 x 2 = 6 over 12 steps: parameters after
// steps 2, 4, ..., 12, first moments after 4, 8, 12, second moments after 6
// and 12, in that order when they coincide; each an all-reduce of all P
// values (18 float64s). Averaging the moments changes the trajectory.
TEST(DesLoc, EachPartIsAveragedOnItsOwnPeriodInOrder) {
  Config cfg = base_config("desloc", "adamw");
  cfg.desloc.param_period = 2;
  cfg.desloc.first_moment_factor = 2;
  cfg.desloc.second_moment_factor = 3;
  Ledger ledger;
  const auto w = run(cfg, 3, 12, 0.01, own_data, at::kDouble, &ledger);
  std::vector<std::pair<int64_t, std::string>> got, want;
  for (const auto& e : ledger.entries()) {
    got.push_back({e.step + 1, e.tag});
    EXPECT_EQ(e.op, CommOp::AllReduce);
    EXPECT_EQ(e.payload_bytes, 18 * 8) << e.tag;
  }
  for (int64_t s = 2; s <= 12; s += 2) {
    want.push_back({s, "params"});
    if (s % 4 == 0) want.push_back({s, "first-moment"});
    if (s % 6 == 0) want.push_back({s, "second-moment"});
  }
  EXPECT_EQ(got, want);
  EXPECT_TRUE(bitwise_equal(w[0], w[2]));  // step 12 ends with every part averaged
  cfg.desloc.first_moment_factor = cfg.desloc.second_moment_factor = 0;
  EXPECT_GT(max_abs_diff(w[0], run(cfg, 3, 12, 0.01, own_data)[0]), 1e-9);
}

TEST(DesLoc, BadSettingsAreRefusedSayingWhatIsAllowed) {
  Config c;
  c.strategy.name = "desloc";
  c.strategy.workers = 2;
  c.desloc.param_period = 0;
  c.desloc.first_moment_factor = -1;
  c.optim.name = "sgd";
  std::string all;
  for (const std::string& problem : validate(c)) all += problem + "\n";
  for (const char* want :
       {"desloc.param_period (K_x) must be in [1, 1e9]", "desloc.first_moment_factor (K_u / K_x) must be in [0, 1000]",
        "optim.name must be adamw or muon, not sgd"})
    EXPECT_NE(all.find(want), std::string::npos) << all;
}

}  // namespace
}  // namespace atl
