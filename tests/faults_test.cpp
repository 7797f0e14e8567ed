// Faults and churn from [faults] and network.outages, and robust
// aggregation of pseudo-gradients: each test runs a small simulation with a
// fault and checks what the run did about it.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "atoll/train.h"
#include "tiny_data.h"

namespace atl {
namespace {

Config fault_config(const std::string& strategy, int64_t workers) {
  Config cfg = tiny_config(strategy, workers);
  cfg.train.steps = 40;
  cfg.train.eval_every = 20;
  cfg.diloco.inner_steps = 5;  // 8 syncs
  cfg.network.compute_time = "flops";
  return cfg;
}

std::vector<nlohmann::json> events_of(const RunSummary& s, const std::string& kind) {
  std::vector<nlohmann::json> out;
  for (const auto& line : s.events) {
    auto e = nlohmann::json::parse(line);
    if (e.at("event") == "fault" && e.at("kind") == kind) out.push_back(e);
  }
  return out;
}

double first_val_loss(const RunSummary& s) {
  for (const auto& line : s.events) {
    auto e = nlohmann::json::parse(line);
    if (e.at("event") == "eval") return e.at("val_loss");
  }
  return NAN;
}

TEST(CorruptWorker, NaNPayloadsAreDroppedEveryRoundAndTheGlobalModelStaysFinite) {
  Config cfg = fault_config("diloco", 4);
  const RunSummary clean = simulate(cfg);
  cfg.faults.corrupt = "2@0-:nan";
  const RunSummary bad = simulate(cfg);
  const auto dropped = events_of(bad, "nonfinite_dropped");
  ASSERT_EQ(dropped.size(), 8u);  // every sync of the run
  for (const auto& e : dropped) EXPECT_EQ(e.at("worker"), 2);
  EXPECT_TRUE(std::isfinite(bad.final_val_loss));
  // Three honest workers instead of four: about as good as the clean run.
  std::printf("final val loss: clean %.4f, worker 2 sending NaN %.4f (start %.4f)\n", clean.final_val_loss,
              bad.final_val_loss, first_val_loss(bad));
  EXPECT_NEAR(bad.final_val_loss, clean.final_val_loss, 0.05);
  EXPECT_LT(bad.final_val_loss, first_val_loss(bad) - 0.2);  // and it trains
}

TEST(CorruptWorker, AHugePayloadWrecksTheMeanButNotTheMedianOrTheTrimmedMean) {
  Config cfg = fault_config("diloco", 4);
  const RunSummary clean = simulate(cfg);
  cfg.faults.corrupt = "1@0-:scale";  // x1e6: finite, so only the aggregator can stop it
  double mean_loss = INFINITY;
  try {
    mean_loss = simulate(cfg).final_val_loss;
  } catch (const std::exception&) {
    // the loss went non-finite: the mean was poisoned
  }
  std::printf("worker 1 sending x1e6: clean %.4f, mean %.4f\n", clean.final_val_loss, mean_loss);
  EXPECT_TRUE(!std::isfinite(mean_loss) || mean_loss > clean.final_val_loss + 1.0) << mean_loss;
  for (const std::string aggregator : {"median", "trimmed_mean"}) {
    cfg.diloco.aggregator = aggregator;
    const RunSummary robust = simulate(cfg);
    std::printf("  %s %.4f\n", aggregator.c_str(), robust.final_val_loss);
    EXPECT_NEAR(robust.final_val_loss, clean.final_val_loss, 0.1) << aggregator;
  }
  cfg.diloco.aggregator = "mean";
  cfg.diloco.clip_norm = 1.0;  // norm clipping bounds the bad worker's pull
  EXPECT_NEAR(simulate(cfg).final_val_loss, clean.final_val_loss, 0.1) << "clip_norm";
}

TEST(Churn, AnAbsentWorkerSendsNothingThenRejoinsWithTheGlobalModelAndBothAreLogged) {
  Config cfg = fault_config("diloco", 3);
  cfg.faults.absent = "1@10-25";
  const RunSummary s = simulate(cfg);
  const auto leave = events_of(s, "leave"), join = events_of(s, "join");
  ASSERT_EQ(leave.size(), 1u);
  ASSERT_EQ(join.size(), 1u);
  EXPECT_EQ(leave[0].at("step"), 10);
  EXPECT_EQ(join[0].at("step"), 25);
  EXPECT_EQ(join[0].at("worker"), 1);
  const auto end = nlohmann::json::parse(s.events.back());
  const auto& ledger = end.at("ledger_per_worker");
  // Away for syncs after steps 14, 19 and 24: three payloads fewer than worker 0.
  EXPECT_LT(ledger[1].at("sent").get<double>(), ledger[0].at("sent").get<double>());
  EXPECT_GT(end.at("bytes_sent_by_tag_total").value("join", 0.0), 0.0);  // the model sent to the joiner
  EXPECT_TRUE(std::isfinite(s.final_val_loss));
}

TEST(DroppedSyncs, WithQ1EveryContributionIsLostAndTheGlobalModelNeverMoves) {
  Config cfg = fault_config("diloco", 2);
  cfg.faults.drop_prob = 1.0;
  cfg.train.final_eval = "sample";  // the same evaluation as at step 0, so equal losses mean the same model
  const RunSummary s = simulate(cfg);
  EXPECT_EQ(events_of(s, "sync_dropped").size(), 16u);  // 2 workers x 8 syncs
  EXPECT_EQ(events_of(s, "no_contribution").size(), 8u);
  EXPECT_EQ(s.final_val_loss, first_val_loss(s));  // the global model is still the initial one
}

TEST(DroppedSyncs, WithQHalfAboutHalfTheContributionsAreLostAndTrainingStillProgresses) {
  Config cfg = fault_config("diloco", 4);
  cfg.faults.drop_prob = 0.5;
  const RunSummary s = simulate(cfg);
  const size_t lost = events_of(s, "sync_dropped").size();  // of 32 contributions
  EXPECT_GE(lost, 8u);
  EXPECT_LE(lost, 24u);
  std::printf("q = 0.5: %zu of 32 contributions lost; final val loss %.4f (start %.4f)\n", lost, s.final_val_loss,
              first_val_loss(s));
  EXPECT_TRUE(std::isfinite(s.final_val_loss));
  EXPECT_LT(s.final_val_loss, first_val_loss(s) - 0.2);  // it still trains
}

TEST(Stragglers, ASpeedScheduleSlowsTheWorkerFromItsStepAndIsLogged) {
  Config cfg = fault_config("ddp", 2);
  cfg.network.device_flops = 1e8;  // compute, not the network, sets the pace
  const RunSummary even = simulate(cfg);
  cfg.faults.speed_schedule = "20:1=3";
  const RunSummary slow = simulate(cfg);
  const auto e = events_of(slow, "speed");
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].at("step"), 20);
  EXPECT_EQ(e[0].at("worker"), 1);
  // DDP waits for the straggler every step: the last 20 steps take 3x the compute.
  EXPECT_GT(slow.sim_seconds, even.sim_seconds * 1.5);
  EXPECT_EQ(slow.final_val_loss, even.final_val_loss);  // time changes, the numbers do not
}

TEST(LinkOutage, OpsNeedingTheLinkWaitUntilItIsBackAndTheOutageIsLogged) {
  Config cfg = fault_config("ddp", 2);
  const RunSummary up = simulate(cfg);
  ASSERT_LT(up.sim_seconds, 1.0);
  cfg.network.outages = "1@0s-2s";
  const RunSummary down = simulate(cfg);
  EXPECT_GE(down.sim_seconds, 2.0);
  EXPECT_LT(down.sim_seconds, 2.0 + up.sim_seconds + 1e-9);
  EXPECT_EQ(events_of(down, "outage").size(), 1u);
  EXPECT_EQ(down.final_val_loss, up.final_val_loss);
}

}  // namespace
}  // namespace atl
