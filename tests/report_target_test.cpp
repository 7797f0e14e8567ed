// The report's time-to-loss target: which rule chooses it, on made-up runs
// whose evaluations are known, and that the page and the table use it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "atoll/report.h"

namespace atl {
namespace {

// A finished run of `steps` steps evaluated at `eval_steps` with `losses`.
RunData run_data(const std::string& name, const std::string& strategy, int seed, int64_t steps,
                 std::vector<double> eval_steps, std::vector<double> losses) {
  RunData r;
  r.name = name;
  r.dir = "runs/" + name;
  r.strategy = strategy;
  r.steps = steps;
  r.eval_step = std::move(eval_steps);
  r.eval_loss = std::move(losses);
  r.eval_time.resize(r.eval_step.size());
  r.eval_bytes.resize(r.eval_step.size());
  for (size_t i = 0; i < r.eval_step.size(); ++i) r.eval_time[i] = 0.5 * r.eval_step[i];
  r.final_val_loss = r.eval_loss.back();
  r.config = {{"strategy.name", "\"" + strategy + "\""}, {"run.seed", std::to_string(seed)}};
  return r;
}

// DDP (evaluated every 20 of 100 steps) and a worse DiLoCo, two seeds each.
std::vector<RunData> two_settings() {
  const std::vector<double> steps = {0, 20, 40, 60, 80, 100};
  return {run_data("ddp_s1", "ddp", 1, 100, steps, {4.0, 3.0, 2.6, 2.4, 2.30, 2.2}),
          run_data("ddp_s2", "ddp", 2, 100, steps, {4.0, 3.1, 2.7, 2.5, 2.34, 2.25}),
          run_data("diloco_s1", "diloco", 1, 100, steps, {4.0, 3.5, 3.0, 2.8, 2.6, 2.5}),
          run_data("diloco_s2", "diloco", 2, 100, steps, {4.0, 3.6, 3.1, 2.9, 2.7, 2.6})};
}

TEST(ReportTarget, WithoutAGivenTargetItIsTheBaselinesLossAtItsLastEvaluationWithin90PercentOfItsRun) {
  const std::vector<RunData> runs = two_settings();
  const TargetLoss t = choose_target_loss(runs, {});
  EXPECT_EQ(t.rule, TargetLoss::Baseline);
  // 90% of 100 steps: the evaluation at step 80; the higher of DDP's two
  // seeds there, so both reach it by step 80.
  EXPECT_DOUBLE_EQ(t.value, 2.34);
  EXPECT_NE(t.why.find("ddp's eval loss at step 80 of 100"), std::string::npos) << t.why;
  EXPECT_NE(t.why.find("the highest of its 2 seeds'"), std::string::npos) << t.why;
  for (const RunData& r : {runs[0], runs[1]}) EXPECT_EQ(time_to_loss(r, t.value), 40.0) << r.name;
  // Not the worst final loss of any setting (DiLoCo's 2.6), which every
  // setting passes long before its end.
  EXPECT_LT(t.value, 2.6);
}

TEST(ReportTarget, TheNamedBaselineSetsTheTarget) {
  ReportOptions o;
  o.baseline = "diloco";
  const TargetLoss t = choose_target_loss(two_settings(), o);
  EXPECT_EQ(t.rule, TargetLoss::Baseline);
  EXPECT_DOUBLE_EQ(t.value, 2.7);
  EXPECT_EQ(t.why.rfind("diloco's eval loss at step 80 of 100", 0), 0u) << t.why;
}

TEST(ReportTarget, AGivenTargetWinsAndSaysWhereItCameFrom) {
  ReportOptions o;
  o.target_loss = 2.5;
  o.target_source = "target_loss in configs/r10_palsgd.toml's [sweep]";
  const TargetLoss t = choose_target_loss(two_settings(), o);
  EXPECT_EQ(t.rule, TargetLoss::Given);
  EXPECT_EQ(t.value, 2.5);
  EXPECT_EQ(t.why, "given (target_loss in configs/r10_palsgd.toml's [sweep])");
}

TEST(ReportTarget, ABaselineWithNoEvaluationBefore90PercentUsesItsFinalLoss) {
  // Evaluated only at the start and the end (train.eval_every = 0).
  const std::vector<RunData> runs = {run_data("ddp", "ddp", 1, 100, {0, 100}, {4.0, 2.2}),
                                     run_data("diloco", "diloco", 1, 100, {0, 100}, {4.0, 2.5})};
  const TargetLoss t = choose_target_loss(runs, {});
  EXPECT_EQ(t.rule, TargetLoss::BaselineFinal);
  EXPECT_DOUBLE_EQ(t.value, 2.2);
  EXPECT_NE(t.why.find("ddp's final eval loss"), std::string::npos) << t.why;
}

TEST(ReportTarget, ThePageAndItsTableSayTheTargetAndTheRuleThatChoseIt) {
  const std::vector<RunData> runs = two_settings();
  const std::string html = html_report(runs, {});
  EXPECT_NE(html.find("<p class=\"sub\" id=\"target\" data-target=\"2.34\" data-rule=\"baseline\">Time to loss "
                      "<b>2.340</b>"),
            std::string::npos);
  EXPECT_NE(html.find("The target is ddp's eval loss at step 80 of 100"), std::string::npos);
  EXPECT_NE(html.find("<th>time to loss 2.340</th>"), std::string::npos);
  ReportOptions given;
  given.target_loss = 2.5;
  const std::string page = html_report(runs, given);
  EXPECT_NE(page.find("data-rule=\"given\">Time to loss <b>2.500</b>"), std::string::npos);
  EXPECT_NE(page.find("The target is the one given (--target-loss)."), std::string::npos);
}

TEST(ReportTarget, SmallTargetsKeepFourSignificantDigits) {
  EXPECT_EQ(format_target_loss(2.4371), "2.437");
  EXPECT_EQ(format_target_loss(0.0081254), "0.008125");  // "%.3f" would print 0.008
}

}  // namespace
}  // namespace atl
