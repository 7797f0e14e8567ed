// Worker agreement (ALGORITHMS.md 9, "Worker agreement"): the correlation of
// the updates from the shared initial model and the relative disagreement,
// against hand-made workers and in runs.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "atoll/train.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/correlation.h"
#include "train/schedule.h"

namespace atl {
namespace {

using Params = std::vector<at::Tensor>;

Params plus(const Params& a, const Params& b) {
  Params out;
  for (size_t k = 0; k < a.size(); ++k) out.push_back(a[k] + b[k]);
  return out;
}

TEST(WorkerAgreement, IdenticalUpdatesGiveCorrelationOneAndNoDisagreement) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(1);
  const Params start = {at::randn({100, 20}, gen), at::randn({50}, gen)};
  const Params update = {at::randn({100, 20}, gen) * 0.1, at::randn({50}, gen) * 0.1};
  const Params worker = plus(start, update);
  const Agreement a = worker_agreement({worker, worker, worker}, start);
  EXPECT_NEAR(a.update_correlation, 1.0, 1e-12);
  EXPECT_NEAR(a.update_correlation_min, 1.0, 1e-12);
  EXPECT_EQ(a.disagreement, 0.0);
}

TEST(WorkerAgreement, IndependentUpdatesFromOneStartAreUncorrelatedAndFarApart) {
  // N iid updates of equal scale s per element over P elements:
  // ‖θ_i − θ̄‖² ≈ P s² (N − 1) / N and ‖θ̄ − θ_0‖² ≈ P s² / N, so the
  // relative disagreement is about √(N − 1).
  auto gen = at::make_generator<at::CPUGeneratorImpl>(2);
  const int64_t n = 4;
  const Params start = {at::randn({300, 200}, gen), at::randn({5000}, gen)};
  std::vector<Params> workers;
  for (int64_t w = 0; w < n; ++w)
    workers.push_back(plus(start, {at::randn({300, 200}, gen) * 0.01, at::randn({5000}, gen) * 0.01}));
  const Agreement a = worker_agreement(workers, start);
  EXPECT_LT(std::abs(a.update_correlation), 0.05);
  EXPECT_LT(std::abs(a.update_correlation_min), 0.05);
  EXPECT_NEAR(a.disagreement, std::sqrt(double(n - 1)), 0.03 * std::sqrt(double(n - 1)));
  // The old measure barely notices: the shared start dominates its variance.
  EXPECT_GT(parameter_correlation(workers).mean, 0.999);
}

TEST(WorkerAgreement, TensorsAreWeightedByTheirSizeAndUnmovedTensorsAreSkipped) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const Params start = {at::randn({1000}, gen), at::randn({30, 100}, gen), at::randn({5000}, gen), at::randn({1}, gen)};
  const at::Tensor u = at::randn({1000}, gen), v = at::randn({30, 100}, gen), z = at::randn({5000}, gen);
  // Tensor 0 (1000 numbers): the same update on both workers, correlation 1.
  // Tensor 1 (3000): opposite updates, correlation −1.
  // Tensor 2: worker 0 leaves it alone (no variance): skipped.
  // Tensor 3: a single number, never any variance: skipped.
  const Params w0 = plus(start, {u, v, at::zeros({5000}), at::ones({1})});
  const Params w1 = plus(start, {u, -v, z, at::ones({1}) * 2});
  const Agreement a = worker_agreement({w0, w1}, start);
  EXPECT_NEAR(a.update_correlation, (1000 * 1.0 + 3000 * -1.0) / 4000, 1e-12);
  EXPECT_NEAR(a.update_correlation_min, -0.5, 1e-12);

  // A correlation other than ±1: tensor 1's update on worker 1 is v + noise,
  // whose Pearson correlation with v is computed here by hand.
  const at::Tensor noisy = v + at::randn({30, 100}, gen);
  const Agreement b = worker_agreement({w0, plus(start, {u, noisy, z, at::ones({1})})}, start);
  const at::Tensor x = v.reshape({-1}).to(at::kDouble), y = noisy.reshape({-1}).to(at::kDouble);
  const at::Tensor xc = x - x.mean(), yc = y - y.mean();
  const double r =
      (xc * yc).sum().item<double>() / std::sqrt((xc * xc).sum().item<double>() * (yc * yc).sum().item<double>());
  ASSERT_GT(r, 0.3);
  ASSERT_LT(r, 0.9);
  EXPECT_NEAR(b.update_correlation, (1000 * 1.0 + 3000 * r) / 4000, 1e-9);
}

TEST(WorkerAgreement, NothingMovedGivesUndefinedFigures) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(4);
  const Params start = {at::randn({10, 10}, gen)};
  const Agreement a = worker_agreement({start, start}, start);
  EXPECT_TRUE(std::isnan(a.update_correlation));
  EXPECT_TRUE(std::isnan(a.disagreement));
}

TEST(WorkerAgreement, RunsLogItInEventsCsvAndSummary) {
  testing::TempDir tmp;
  // DDP keeps the workers bitwise identical: correlation 1, no disagreement.
  Config ddp = tiny_config("ddp", 2);
  ddp.strategy.correlation_every = 10;
  int measured = 0;
  for (const auto& e : events_of(simulate(ddp)))
    if (e.contains("update_correlation")) {
      ++measured;
      EXPECT_NEAR(e["update_correlation"].get<double>(), 1.0, 1e-9);
      EXPECT_EQ(e["disagreement"].get<double>(), 0.0);
    }
  EXPECT_EQ(measured, 2);

  // SPARTA averages a sliver each step: the workers drift apart, visibly.
  Config cfg = tiny_config("sparta", 3);
  cfg.strategy.correlation_every = 10;
  cfg.sparta.p = 0.05;
  cfg.run.out_dir = tmp.str();
  cfg.run.name = "sparta";
  const RunSummary s = train(cfg);
  EXPECT_GT(s.final_disagreement, 0.01);
  EXPECT_LT(s.final_update_correlation, 1.0);
  EXPECT_GT(s.final_update_correlation, -1.0);
  const nlohmann::json summary = nlohmann::json::parse(testing::read_text(tmp.path("sparta") + "/summary.json"));
  EXPECT_EQ(summary["final_update_correlation"].get<double>(), s.final_update_correlation);
  EXPECT_EQ(summary["final_disagreement"].get<double>(), s.final_disagreement);
  EXPECT_EQ(summary["final_val_loss_se"].get<double>(), s.final_val_loss_se);
  EXPECT_EQ(summary["final_eval_tokens"].get<int64_t>(), s.final_eval_tokens);
  // metrics.csv: the new columns, filled on the rows that measured them.
  std::ifstream csv(tmp.path("sparta") + "/metrics.csv");
  std::string header, row;
  std::getline(csv, header);
  EXPECT_NE(header.find(",val_loss_se,update_correlation,update_correlation_min,disagreement"), std::string::npos)
      << header;
  bool filled = false;
  while (std::getline(csv, row))
    if (row.rfind("train,10,", 0) == 0) filled = row.back() != ',';
  EXPECT_TRUE(filled) << "no disagreement in the step-10 train row";
}

// A method that syncs after steps t >= warmup with (t + 1) mod h = 0, as DiLoCo.
struct Rounds : Strategy {
  int64_t h, warmup;
  Rounds(int64_t h_, int64_t warmup_) : h(h_), warmup(warmup_) {}
  void step(int64_t, double) override {}
  void visit_state(StateVisitor&) override {}
  int64_t next_sync_step(int64_t t) const override {
    const int64_t u = std::max(t, warmup);
    return (u + h) / h * h - 1;
  }
  int64_t local_start_step() const override { return warmup; }
};
struct NoSyncs : Strategy {
  void step(int64_t, double) override {}
  void visit_state(StateVisitor&) override {}
};

std::vector<int64_t> correlation_steps(const Config& cfg, const Strategy& m) {
  Schedule s(cfg);
  std::vector<int64_t> out;
  for (int64_t step = 0; step <= cfg.train.steps; ++step)
    if (s.is_correlation_step(step, m)) out.push_back(step);
  return out;
}

TEST(WorkerAgreement, MethodsWithOuterSyncsAreMeasuredJustBeforeASyncAfterTheirWarmup) {
  Config cfg = tiny_config("diloco", 2);
  cfg.train.steps = 40;
  cfg.strategy.correlation_every = 10;
  // H = 5: steps 4, 9, 14, ... end with a sync; the last of them at or
  // before each multiple of 10, and the last of the run (39).
  EXPECT_EQ(correlation_steps(cfg, Rounds(5, 0)), (std::vector<int64_t>{9, 19, 29, 39}));
  // H = 25 > correlation_every: before every sync.
  EXPECT_EQ(correlation_steps(cfg, Rounds(25, 0)), (std::vector<int64_t>{24}));
  // A DDP warm-up of 9 steps: step 9 ends with a sync, but the workers have
  // not trained apart yet; the warm-up's end is where the reference model is taken.
  EXPECT_EQ(correlation_steps(cfg, Rounds(5, 9)), (std::vector<int64_t>{19, 29, 39}));
  Schedule s(cfg);
  for (int64_t step = 0; step <= 40; ++step)
    EXPECT_EQ(s.is_agreement_origin_step(step, Rounds(5, 9)), step == 9) << step;
  EXPECT_FALSE(s.is_agreement_origin_step(0, Rounds(5, 0)));
  // Methods without outer syncs: every correlation_every steps and the end.
  cfg.train.steps = 35;
  EXPECT_EQ(correlation_steps(cfg, NoSyncs()), (std::vector<int64_t>{10, 20, 30, 35}));
}

TEST(WorkerAgreement, ADiLoCoRunReportsTheDisagreementItHadBeforeItsLastSync) {
  // N = 2, H = 5, 20 steps: right after the syncs (steps 10 and 20) the
  // workers are identical, so a measurement there reads 1 and 0.
  Config cfg = tiny_config("diloco", 2);
  cfg.strategy.correlation_every = 10;
  const RunSummary s = simulate(cfg);
  EXPECT_GT(s.final_disagreement, 1e-6);
  EXPECT_LT(s.final_update_correlation, 1.0 - 1e-9);
  std::vector<int64_t> measured;
  for (const auto& e : events_of(s))
    if (e.contains("disagreement")) measured.push_back(e["step"].get<int64_t>());
  EXPECT_EQ(measured, (std::vector<int64_t>{9, 19}));
}

}  // namespace
}  // namespace atl
