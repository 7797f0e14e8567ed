// The HTML report and the run-folder reader behind it, on real (tiny) runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "atoll/report.h"
#include "atoll/train.h"
#include "report/figure_text.h"
#include "report/groups.h"
#include "report/target_time.h"
#include "test_util.h"
#include "tiny_data.h"
#include "util/format.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Two finished tiny runs (DDP and DiLoCo, 2 workers) shared by the tests.
struct TwoRuns {
  TempDir dir;
  std::string ddp, diloco;
  TwoRuns() {
    for (const char* strategy : {"ddp", "diloco"}) {
      Config cfg = tiny_config(strategy, 2);
      cfg.train.steps = 8;
      cfg.train.batch_size = 2;
      cfg.train.eval_every = 4;
      cfg.train.eval_batches = 1;
      cfg.train.log_every = 2;
      cfg.strategy.correlation_every = 2;
      cfg.diloco.inner_steps = 4;
      cfg.run.out_dir = dir.str();
      cfg.run.name = std::string(strategy) + "<i>";
      cfg.run.progress = false;
      train(cfg);
    }
    ddp = dir.path("ddp<i>");
    diloco = dir.path("diloco<i>");
  }
};

const TwoRuns& runs() {
  static const TwoRuns r;
  return r;
}

TEST(RunData, ReadsTheSeriesAndFiguresOfAFinishedRun) {
  const RunData d = load_run(runs().diloco);
  EXPECT_EQ(d.strategy, "diloco");
  EXPECT_EQ(d.workers, 2);
  EXPECT_EQ(d.steps, 8);
  EXPECT_EQ(d.eval_step, (std::vector<double>{0, 4, 8}));
  ASSERT_EQ(d.eval_loss.size(), 3u);
  EXPECT_DOUBLE_EQ(d.eval_loss.back(), d.final_val_loss);
  EXPECT_GT(d.eval_bytes.back(), d.eval_bytes.front());
  EXPECT_DOUBLE_EQ(d.bytes_sent_total, 2 * d.bytes_sent_per_worker);  // both workers send the same
  // A method that syncs is measured just before each sync (steps 3 and 7
  // for H = 4), where the workers are furthest apart, not at multiples of
  // correlation_every, where right after a sync they trivially agree.
  EXPECT_EQ(d.corr_step, (std::vector<double>{3, 7}));
  EXPECT_TRUE(d.has_correlation);
  EXPECT_EQ(d.update_corr.size(), 2u);
  EXPECT_EQ(d.disagreement.size(), 2u);
  EXPECT_EQ(d.final_update_correlation, d.update_corr.back());
  EXPECT_EQ(d.final_disagreement, d.disagreement.back());
  EXPECT_GT(d.disagreement[0], 0);
  EXPECT_GT(d.final_disagreement, 0);
  EXPECT_GT(d.final_val_loss_se, 0);
  EXPECT_EQ(d.config.at("strategy.name"), "\"diloco\"");
  EXPECT_EQ(d.config.count("run.name"), 0u);  // bookkeeping keys are left out
  EXPECT_EQ(d.config.at("optim.lr"), "0.001");
}

TEST(RunData, TimeToLossIsTheFirstEvaluationAtOrBelowTheTarget) {
  const RunData d = load_run(runs().ddp);
  EXPECT_DOUBLE_EQ(time_to_loss(d, d.eval_loss[1]), d.eval_time[1]);
  EXPECT_LT(time_to_loss(d, d.final_val_loss - 1), 0);
}

TEST(RunData, AFolderThatIsNotAFinishedRunIsNamedInTheError) {
  TempDir dir;
  fs::create_directories(dir.path("half"));
  try {
    load_run(dir.path("half"));
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("half' is not a finished run"), std::string::npos) << e.what();
  }
  fs::create_directories(dir.path("bad"));
  dir.write("bad/summary.json", "{\"final_val_loss\": 2}");
  dir.write("bad/metrics.jsonl", "{\"event\":\"start\"}\nnot json\n");
  try {
    load_run(dir.path("bad"));
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(RunData, ASummaryOrMetricsLineNestedDeeperThan64LevelsIsRefusedNamingTheFile) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto error_of = [](const std::string& summary, const std::string& metrics) {
    try {
      parse_run("runs/a", summary, metrics, std::nullopt);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  const std::string in_summary = error_of("{\"final_val_loss\": 2, \"x\": " + deep + "}", "");
  EXPECT_NE(in_summary.find("runs/a/summary.json"), std::string::npos) << in_summary;
  EXPECT_NE(in_summary.find("deeper than 64 levels"), std::string::npos) << in_summary;
  const std::string in_metrics = error_of("{\"final_val_loss\": 2}", "{\"event\":\"start\"}\n{\"x\": " + deep + "}\n");
  EXPECT_NE(in_metrics.find("runs/a/metrics.jsonl' line 2"), std::string::npos) << in_metrics;
  EXPECT_NE(in_metrics.find("deeper than 64 levels"), std::string::npos) << in_metrics;
}

TEST(HtmlReport, HasTheTableSixChartsTheDifferingKeysAndInlinedChartJs) {
  const RunData ddp = load_run(runs().ddp), diloco = load_run(runs().diloco);
  ReportOptions o;
  o.title = "tiny & small";
  const std::string html = html_report({diloco, ddp}, o);
  EXPECT_NE(html.find("<title>tiny &amp; small</title>"), std::string::npos);
  for (const char* id :
       {"loss-steps", "loss-bytes", "loss-time", "corr-steps", "update-corr-steps", "disagreement-steps"})
    EXPECT_NE(html.find(std::string("<canvas id=\"") + id + "\">"), std::string::npos) << id;
  // Works offline: the library is in the page, nothing is fetched.
  EXPECT_NE(html.find("Chart.js v4"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  // The DDP run is the reference by default, whatever the order.
  EXPECT_NE(html.find("<tr class=\"baseline\"><td>ddp&lt;i&gt;</td>"), std::string::npos);
  char diff[64];
  std::snprintf(diff, sizeof diff, "%+.4f", diloco.final_val_loss - ddp.final_val_loss);
  EXPECT_NE(html.find(diff), std::string::npos) << diff;
  char reduction[64];
  std::snprintf(reduction, sizeof reduction, "%.3g&times;", ddp.bytes_sent_per_worker / diloco.bytes_sent_per_worker);
  EXPECT_NE(html.find(reduction), std::string::npos) << reduction;
  // Differing keys are listed, shared ones only in the shared block.
  const auto diff_table = html.substr(html.find("id=\"config-diff\""));
  EXPECT_NE(diff_table.find("<code>strategy.name</code>"), std::string::npos);
  EXPECT_EQ(diff_table.substr(0, diff_table.find("</table>")).find("optim.lr"), std::string::npos);
}

TEST(CompareTable, HasTheWorkersAgreementColumns) {
  const std::string table = compare_runs({runs().ddp, runs().diloco});
  EXPECT_NE(table.find("| correlation | update correlation | disagreement |\n"), std::string::npos) << table;
  const RunData ddp = load_run(runs().ddp);
  char figures[64];
  std::snprintf(figures, sizeof figures, "| %.4f | %.4g |\n", ddp.final_update_correlation, ddp.final_disagreement);
  EXPECT_NE(table.find(figures), std::string::npos) << figures << "\n" << table;
}

// Two seeds each of DDP and DiLoCo: atoll compare shows one row per setting,
// the mean over its seeds with its interval and the paired difference.
TEST(CompareTable, SeedsOfASettingAreOneRowWithTheirMeanAndInterval) {
  TempDir dir;
  std::vector<std::string> folders;
  for (const char* strategy : {"ddp", "diloco"})
    for (int k = 1; k <= 2; ++k) {
      Config cfg = tiny_config(strategy, 2);
      cfg.train.steps = 4;
      cfg.run.seed = 1336 + k;
      cfg.run.out_dir = dir.str();
      cfg.run.name = std::string(strategy) + "_s" + std::to_string(k);
      train(cfg);
      folders.push_back(dir.path(cfg.run.name));
    }
  const std::string table = compare_runs(folders);
  const double d1 = load_run(folders[0]).final_val_loss, d2 = load_run(folders[1]).final_val_loss;
  const double l1 = load_run(folders[2]).final_val_loss, l2 = load_run(folders[3]).final_val_loss;
  EXPECT_NE(table.find("| ddp | 2 | ddp | 2 | 4 | 128 | " + format_mean_interval(mean_interval({d1, d2}), 4) + " |"),
            std::string::npos)
      << table;
  const MeanInterval diff = mean_interval({l1 - d1, l2 - d2});
  EXPECT_NE(table.find(format_number("%+.4f", diff.mean) + format_number(" ± %.4f", diff.half_width) +
                       " (n=2 pairs) (" + (paired_t_p_value(diff) <= 0.05 ? "significant" : "inconclusive") + ")"),
            std::string::npos)
      << table;
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 2 + 2);  // header, rule, 2 rows, note
}

TEST(HtmlReport, AnExplicitBaselineAndTargetLossAreUsed) {
  const RunData ddp = load_run(runs().ddp), diloco = load_run(runs().diloco);
  ReportOptions o;
  o.baseline = diloco.name;
  o.target_loss = 99;  // every run is below it from the start
  const std::string html = html_report({ddp, diloco}, o);
  EXPECT_NE(html.find("<tr class=\"baseline\"><td>diloco&lt;i&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("time to loss 99.000"), std::string::npos);
  o.baseline = "nope";
  EXPECT_THROW(html_report({ddp, diloco}, o), std::invalid_argument);
}

TEST(HtmlReport, ATargetNoRunReachesShowsEachRunsEndAsALowerBound) {
  const RunData ddp = load_run(runs().ddp), diloco = load_run(runs().diloco);
  ReportOptions o;
  o.target_loss = 1e-9;  // below any loss
  const std::string html = html_report({ddp, diloco}, o);
  EXPECT_EQ(html.find(">never<"), std::string::npos);
  EXPECT_NE(html.find("&ge; " + seconds_text(ddp.sim_seconds) + " (0 of 1 reached)"), std::string::npos);
}

TEST(CompareTable, ATimeToLossColumnCensorsARunThatNeverReachesItAtItsEnd) {
  const RunData ddp = load_run(runs().ddp);
  const std::string none = compare_runs({runs().ddp, runs().diloco}, 1e-9);
  EXPECT_NE(none.find(" time to loss "), std::string::npos) << none;
  EXPECT_NE(none.find("| ≥ " + seconds_text(ddp.sim_seconds) + " (0 of 1 reached) |"), std::string::npos) << none;
  const std::string all = compare_runs({runs().ddp, runs().diloco}, 99);
  EXPECT_EQ(all.find("| ≥ "), std::string::npos) << all;  // every run reaches 99 at its first evaluation
  EXPECT_EQ(compare_runs({runs().ddp}).find("time to loss"), std::string::npos);
}

TEST(HtmlReport, WritingReplacesTheFileWholeAndABadFolderLeavesItAlone) {
  TempDir dir;
  const std::string out = dir.path("r/report.html");
  write_html_report({runs().ddp, runs().diloco}, out, {});
  const std::string first = testing::read_text(out);
  EXPECT_NE(first.find("</html>"), std::string::npos);
  EXPECT_THROW(write_html_report({runs().ddp, dir.path("missing")}, out, {}), std::runtime_error);
  EXPECT_EQ(testing::read_text(out), first);
}

}  // namespace
}  // namespace atl

namespace atl {
namespace {

RunData seeded_run(const std::string& name, const std::string& strategy, int seed, double loss) {
  RunData r;
  r.name = name;
  r.strategy = strategy;
  r.final_val_loss = loss;
  r.config = {{"strategy.name", strategy}, {"run.seed", std::to_string(seed)}};
  return r;
}

TEST(SeedGroups, RunsDifferingOnlyInTheirSeedAreOneSettingNamedByTheirStem) {
  const std::vector<RunData> runs = {seeded_run("ddp_s1", "ddp", 1, 2.0), seeded_run("diloco_s1", "diloco", 1, 1.9),
                                     seeded_run("ddp_s2", "ddp", 2, 2.2), seeded_run("diloco_s2", "diloco", 2, 2.1),
                                     seeded_run("again", "ddp", 2, 2.2)};  // a second seed-2 DDP: its own group
  const auto groups = group_by_seed(runs);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].name, "ddp");
  EXPECT_EQ(groups[0].runs.size(), 2u);
  EXPECT_EQ(groups[1].name, "diloco");
  EXPECT_EQ(groups[2].name, "again");
  // Paired by seed: diloco is 0.1 below ddp in both seeds.
  const MeanInterval d = paired_loss_difference(groups[1], groups[0]);
  EXPECT_EQ(d.n, 2);
  EXPECT_NEAR(d.mean, -0.1, 1e-12);
  EXPECT_NEAR(d.half_width, 0, 1e-12);
  EXPECT_EQ(versus_verdicts(groups, groups[0])[1], "significant");
  const GroupFigures f = group_figures(groups[0], 0);
  EXPECT_DOUBLE_EQ(f.loss.mean, 2.1);
  EXPECT_NEAR(f.loss.half_width, student_t_quantile(0.95, 1) * std::sqrt(0.02) / std::sqrt(2.0), 1e-12);
  EXPECT_EQ(&reference_group(groups, ""), &groups[0]);           // the DDP setting
  EXPECT_EQ(&reference_group(groups, "diloco_s2"), &groups[1]);  // a run's name finds its setting
  EXPECT_THROW(reference_group(groups, "nope"), std::invalid_argument);
}

TEST(SeedGroups, OneSeedHasNoIntervalAndADifferenceAcrossZeroIsInconclusive) {
  const std::vector<RunData> runs = {seeded_run("a_s1", "ddp", 1, 2.0), seeded_run("b_s1", "diloco", 1, 1.9),
                                     seeded_run("a_s2", "ddp", 2, 2.0), seeded_run("b_s2", "diloco", 2, 2.1)};
  const auto groups = group_by_seed(runs);
  EXPECT_EQ(versus_verdicts(groups, groups[0])[1], "inconclusive");
  const std::vector<RunData> single = {seeded_run("a", "ddp", 1, 2.0), seeded_run("b", "diloco", 1, 1.9)};
  const auto one = group_by_seed(single);
  EXPECT_EQ(versus_verdicts(one, one[0])[1], "one seed");
}

TEST(SeedGroups, SeveralSettingsAgainstOneBaselineAreHolmAdjustedAndTheNoteSaysTheIntervalsAreNot) {
  // Three settings each 0.7 / 1.0 / 1.3 above the baseline in seeds 1..3:
  // each interval excludes 0 (p = 0.029 alone), but none is within 0.05 / 3.
  std::vector<RunData> runs;
  for (int seed = 1; seed <= 3; ++seed) runs.push_back(seeded_run("base_s" + std::to_string(seed), "ddp", seed, 2.0));
  for (const char* name : {"x", "y", "z"})
    for (int seed = 1; seed <= 3; ++seed)
      runs.push_back(seeded_run(std::string(name) + "_s" + std::to_string(seed), name, seed, 2.4 + 0.3 * seed));
  const auto groups = group_by_seed(runs);
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_GT(paired_loss_difference(groups[1], groups[0]).low(), 0);  // unadjusted: excludes 0
  EXPECT_EQ(versus_verdicts(groups, groups[0]),
            (std::vector<std::string>{"", "inconclusive", "inconclusive", "inconclusive"}));
  const std::string note = holm_note(groups, groups[0]);
  EXPECT_NE(note.find("Holm-adjusted over the 3 settings"), std::string::npos) << note;
  EXPECT_NE(note.find("unadjusted 95% intervals"), std::string::npos) << note;
  // One setting against the baseline: no family, no adjustment, no note.
  const std::vector<RunGroup> pair = {groups[0], groups[1]};
  EXPECT_EQ(versus_verdicts(pair, pair[0])[1], "significant");
  EXPECT_EQ(holm_note(pair, pair[0]), "");
}

TEST(SeedGroups, APairedDifferenceSaysItsPairsAndANonFiniteOneSaysItDiverged) {
  EXPECT_EQ(format_paired_difference(mean_interval({0.1, 0.1, 0.1}), 2.0, "±"), "+0.1000 (n=3 pairs)");
  EXPECT_EQ(format_paired_difference(mean_interval({0.1}), 2.0, "±"), "+0.1000 (+5.00%, n=1 pair)");
  const std::string noisy = format_paired_difference(mean_interval({0.1, 0.1 + 1e-14, 0.1 - 1e-14}), 2.0, "±");
  EXPECT_EQ(noisy, "+0.1000 (n=3 pairs)");  // no "± 0.0000", no "± 2e-14"
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(format_paired_difference(mean_interval({0.1, nan}), 2.0, "±"), "not finite (diverged)");
}

RunData timed_run(const std::string& name, int seed, std::vector<double> eval_loss, double end) {
  RunData r = seeded_run(name, "diloco", seed, eval_loss.back());
  r.eval_loss = eval_loss;
  for (size_t i = 0; i < eval_loss.size(); ++i) {
    r.eval_step.push_back(10.0 * double(i));
    r.eval_time.push_back(end * double(i) / double(eval_loss.size() - 1));
  }
  r.sim_seconds = end;
  return r;
}

TEST(TargetTime, ARunThatNeverReachesTheTargetIsCensoredAtItsEndNotDropped) {
  const RunData fast = timed_run("d_s1", 1, {3.0, 2.0, 1.0}, 20.0);  // reaches 1.5 at 20 s
  const RunData slow = timed_run("d_s2", 2, {3.0, 2.5, 2.0}, 40.0);  // never: its end, 40 s
  EXPECT_TRUE(target_time(fast, 1.5).reached);
  EXPECT_DOUBLE_EQ(target_time(fast, 1.5).seconds, 20.0);
  EXPECT_FALSE(target_time(slow, 1.5).reached);
  EXPECT_DOUBLE_EQ(target_time(slow, 1.5).seconds, 40.0);
  const std::vector<RunData> runs = {fast, slow};
  const GroupFigures f = group_figures(group_by_seed(runs).front(), 1.5);
  EXPECT_EQ(f.to_target.reached, 1);
  EXPECT_EQ(f.to_target.runs, 2);
  EXPECT_DOUBLE_EQ(f.to_target.seconds.mean, 30.0);  // dropping the miss would say 20 s
  EXPECT_EQ(target_times_text(f.to_target), "≥ 30.0 s (1 of 2 reached)");
  EXPECT_EQ(target_times_text(f.to_target, "&plusmn;", "&ge;"), "&ge; 30.0 s (1 of 2 reached)");
  const GroupFigures easy = group_figures(group_by_seed(runs).front(), 2.5);  // both reach it
  EXPECT_EQ(easy.to_target.reached, 2);
  EXPECT_EQ(target_times_text(easy.to_target).find("reached"), std::string::npos);
}

}  // namespace
}  // namespace atl
