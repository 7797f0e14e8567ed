// atoll whatif on a hand-made pair of runs whose times have a closed form.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "atoll/whatif.h"
#include "comm/timing_trace.h"
#include "test_util.h"
#include "train/timing_files.h"
#include "util/file_io.h"

namespace atl {
namespace {

constexpr double kCompute = 0.1;  // c: seconds of compute per step
constexpr double kPayload = 1e6;  // S: bytes per all-reduce

// A finished two-worker run made by hand: `steps` steps of c seconds, a
// blocking all-reduce of S bytes every `every` steps, evaluations at the
// given steps with the given losses. No training happens: retime needs only
// the folder's config, events, summary and timing traces.
void hand_made_run(const std::filesystem::path& dir, const std::string& strategy, int64_t steps, int64_t every,
                   const std::vector<std::pair<int64_t, double>>& evals) {
  Config cfg;
  cfg.strategy.name = strategy;
  cfg.strategy.workers = 2;
  cfg.train.steps = steps;
  cfg.network.bandwidth = "100Mbit/s";
  cfg.network.latency = "0ms";
  std::filesystem::create_directories(dir);
  write_file_atomic((dir / "config.toml").string(), to_toml(cfg));
  std::string metrics =
      nlohmann::json{{"event", "start"}, {"strategy", strategy}, {"workers", 2}, {"params", 250000}}.dump() + "\n";
  for (const auto& [step, loss] : evals)
    metrics += nlohmann::json{{"event", "eval"}, {"step", step}, {"val_loss", loss}, {"sim_time_s", 0.0}}.dump() + "\n";
  metrics += nlohmann::json{{"event", "train"}, {"step", steps}, {"compute_s", double(steps) * kCompute}}.dump() + "\n";
  metrics += nlohmann::json{{"event", "end"}, {"final_val_loss", evals.back().second}}.dump() + "\n";
  write_file_atomic((dir / "metrics.jsonl").string(), metrics);
  write_file_atomic((dir / "summary.json").string(),
                    nlohmann::json{{"final_val_loss", evals.back().second}, {"steps", steps}, {"workers", 2}}.dump());
  for (int64_t r = 0; r < 2; ++r) {
    TimingTrace trace;
    for (int64_t t = 0; t < steps; ++t) {
      trace.step();
      trace.compute(kCompute);
      if ((t + 1) % every == 0) trace.call({TracedOp::AllReduce, 0, kPayload, 0, {}, "pseudo-grad"});
    }
    write_timing_trace(dir, r, trace);
  }
}

TEST(Whatif, TheCrossoverOfAHandMadePairEqualsTheClosedForm) {
  testing::TempDir tmp;
  // "ddp" all-reduces every step and reaches loss 1.0 at step 10;
  // "diloco" every 10 steps and reaches it at step 20. With N = 2 and no
  // latency a ring all-reduce takes 2(N-1)/N S / b = S / b, so
  //   ddp:    10 c + 10 S / b        diloco: 20 c + 2 S / b
  // and they are equal at b* = 8 S / (10 c) = 8e6 B/s (64 Mbit/s);
  // below b* diloco is first.
  hand_made_run(tmp.path("ddp"), "ddp", 10, 1, {{5, 1.5}, {10, 1.0}});
  hand_made_run(tmp.path("diloco"), "diloco", 20, 10, {{10, 1.4}, {20, 1.0}});
  WhatifOptions o;
  o.bandwidth_from = 1e6;
  o.bandwidth_to = 1e9;
  o.points_per_decade = 2;
  o.crossover_tolerance = 1e-8;
  o.target_loss = 1.0;
  const WhatifResult r = run_whatif({tmp.path("ddp"), tmp.path("diloco")}, o);
  EXPECT_EQ(r.baseline, "ddp");
  EXPECT_DOUBLE_EQ(r.target_loss, 1.0);
  ASSERT_EQ(r.settings.size(), 2u);
  ASSERT_EQ(r.bandwidths.size(), 7u);
  for (size_t i = 0; i < r.bandwidths.size(); ++i) {
    const double b = r.bandwidths[i];
    EXPECT_NEAR(r.settings[0].time_to_target[i], 10 * kCompute + 10 * kPayload / b, 1e-9 * (1 + 10 * kPayload / b));
    EXPECT_NEAR(r.settings[1].time_to_target[i], 20 * kCompute + 2 * kPayload / b, 1e-9 * (1 + 2 * kPayload / b));
  }
  ASSERT_EQ(r.crossovers.size(), 1u);
  EXPECT_EQ(r.crossovers[0].setting, "diloco");
  EXPECT_TRUE(r.crossovers[0].faster_below);
  EXPECT_NEAR(r.crossovers[0].bandwidth, 8 * kPayload / (10 * kCompute), 8e6 * 1e-7);
  const std::string md = whatif_markdown(r);
  EXPECT_NE(md.find("diloco reaches 1 before ddp below 64 Mbit/s"), std::string::npos) << md;
}

TEST(Whatif, ASettingThatNeverReachesTheTargetIsCensoredAtItsEndAndHasNoCrossover) {
  testing::TempDir tmp;
  hand_made_run(tmp.path("ddp"), "ddp", 10, 1, {{5, 1.5}, {10, 1.0}});
  hand_made_run(tmp.path("diloco"), "diloco", 20, 10, {{10, 1.4}, {20, 1.2}});
  WhatifOptions o;
  o.target_loss = 1.1;
  const WhatifResult r = run_whatif({tmp.path("ddp"), tmp.path("diloco")}, o);
  // Not dropped: its time is its whole run, a lower bound (target_time.h).
  EXPECT_EQ(r.settings[1].reached, 0);
  EXPECT_EQ(r.settings[1].seeds, 1);
  for (size_t i = 0; i < r.bandwidths.size(); ++i)
    EXPECT_DOUBLE_EQ(r.settings[1].time_to_target[i], r.settings[1].total_time[i]);
  EXPECT_TRUE(r.crossovers.empty());
  const std::string md = whatif_markdown(r);
  EXPECT_NE(md.find("(0 of 1 reached)"), std::string::npos) << md;
  EXPECT_NE(md.find("| ≥ "), std::string::npos) << md;
  EXPECT_NE(md.find("- diloco: no crossover can be placed"), std::string::npos) << md;
}

TEST(Whatif, AProjectionChargesTheBiggerModelsPayloadsAndComputeToTheSameSteps) {
  testing::TempDir tmp;
  hand_made_run(tmp.path("ddp"), "ddp", 10, 1, {{5, 1.5}, {10, 1.0}});
  Projection p;
  p.params = 500000;     // twice the run's 250,000: payloads x 2
  p.step_seconds = 0.3;  // compute x 3
  const RetimedRun r = retime_run(tmp.path("ddp"), {"network.bandwidth=1e7"}, p);
  EXPECT_DOUBLE_EQ(r.bytes_scale, 2.0);
  EXPECT_DOUBLE_EQ(r.compute_scale, 3.0);
  const auto end = nlohmann::json::parse(r.events.back());
  EXPECT_NEAR(end.at("sim_time_s").get<double>(), 10 * 0.3 + 10 * 2 * kPayload / 1e7, 1e-9);
  // Labelled as a projection, with the assumption it makes.
  const auto summary = nlohmann::json::parse(r.summary_json);
  EXPECT_NE(summary.at("projection").at("assumes").get<std::string>().find("step-loss curve"), std::string::npos);
  // From a device instead: 6 P tokens / (FLOP/s x MFU), tokens from the start event.
  Projection d;
  d.params = 500000;
  d.device_flops = 1e12;
  d.mfu = 0.5;
  EXPECT_THROW(retime_run(tmp.path("ddp"), {}, d), std::invalid_argument);  // no tokens per step recorded
}

TEST(Whatif, TheDefaultTargetIsTheReportsTheBaselinesLossAt90PercentOfItsRun) {
  testing::TempDir tmp;
  // ddp's last evaluation within 90% of its 10 steps is step 5 (loss 1.5);
  // the old default, the worst final loss, would have been 1.2 (diloco's).
  hand_made_run(tmp.path("ddp"), "ddp", 10, 1, {{5, 1.5}, {10, 1.0}});
  hand_made_run(tmp.path("diloco"), "diloco", 20, 10, {{10, 1.4}, {20, 1.2}});
  WhatifOptions o;
  o.bandwidth_from = 1e6;
  o.bandwidth_to = 1e7;
  o.points_per_decade = 1;
  const WhatifResult r = run_whatif({tmp.path("ddp"), tmp.path("diloco")}, o);
  EXPECT_DOUBLE_EQ(r.target_loss, 1.5);
  EXPECT_NE(r.target_why.find("ddp's eval loss at step 5 of 10"), std::string::npos) << r.target_why;
  EXPECT_NE(whatif_markdown(r).find(r.target_why), std::string::npos);
}

}  // namespace
}  // namespace atl
