// Presets and sweeps: [sweep] expansion and validation, claim checks, running
// a sweep through the atoll binary (resume, refusal, failures), RESULTS.md,
// and the shipped presets themselves.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "atoll/config.h"
#include "atoll/experiment.h"
#include "atoll/report.h"
#include "atoll/setup.h"
#include "child_process.h"
#include "test_util.h"
#include "tiny_data.h"
#include "util/stats.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using testing::invalid_argument_message;
using testing::TempDir;

using testing::kAtoll;

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// A preset over the generated tiny corpus: a one-layer GPT, a few steps.
std::string tiny_preset(const TempDir& dir, const std::string& sweep, const std::string& name = "p.toml") {
  const std::string path = dir.path(name);
  write(path, "[data]\ndataset = \"text\"\ndir = \"" + tiny_text_dir() +
                  "\"\n[model]\nn_layer = 1\nn_head = 2\nn_embd = 16\nblock_size = 16\n"
                  "[train]\nsteps = 6\nbatch_size = 2\neval_every = 3\neval_batches = 1\nlog_every = 3\n"
                  "[optim]\nwarmup_steps = 2\n[strategy]\nname = \"diloco\"\nworkers = 2\n[diloco]\ninner_steps = 3\n"
                  "[run]\nprogress = false\nout_dir = \"" +
                  dir.path("runs") + "\"\n" + sweep);
  return path;
}

std::vector<std::string> names(const SweepSpec& spec) {
  std::vector<std::string> out;
  for (const auto& r : spec.runs) out.push_back(r.name);
  return out;
}

TEST(SweepSpec, RunsTimesGridWithRunRestrictedAxesAndCommandLineAxes) {
  TempDir dir;
  const auto preset = tiny_preset(dir, R"P([sweep]
runs = ["ddp: strategy.name=ddp", "diloco: strategy.name=diloco"]
grid = ["diloco.inner_steps=2,3@diloco", "run.seed=1,2"]
)P");
  const SweepSpec spec = load_sweep(preset, {"optim.lr=0.001,0.002@ddp"}, {}, false);
  EXPECT_EQ(names(spec),
            (std::vector<std::string>{"ddp_seed1_lr0.001", "ddp_seed1_lr0.002", "ddp_seed2_lr0.001",
                                      "ddp_seed2_lr0.002", "diloco_inner_steps2_seed1", "diloco_inner_steps2_seed2",
                                      "diloco_inner_steps3_seed1", "diloco_inner_steps3_seed2"}));
  EXPECT_EQ(spec.runs[0].overrides, (std::vector<std::string>{"strategy.name=ddp", "run.seed=1", "optim.lr=0.001"}));
  EXPECT_EQ(spec.name, "p");  // the file stem
}

TEST(SweepSpec, QuickOverridesComeFirstAndCommandLineOverridesLast) {
  TempDir dir;
  const auto preset = tiny_preset(dir, R"P([sweep]
name = "s"
runs = ["a: train.steps=5"]
quick = ["train.steps=2", "train.eval_every=1"]
)P");
  const SweepSpec quick = load_sweep(preset, {}, {"optim.lr=0.01"}, true);
  EXPECT_EQ(quick.name, "s_quick");
  EXPECT_EQ(quick.runs[0].overrides,
            (std::vector<std::string>{"train.steps=2", "train.eval_every=1", "train.steps=5", "optim.lr=0.01"}));
  EXPECT_EQ(load_sweep(preset, {}, {}, false).runs[0].overrides, (std::vector<std::string>{"train.steps=5"}));
}

TEST(SweepSpec, AQuickEntryForNamedRunsWinsOverTheirOwnKeys) {
  TempDir dir;
  const auto preset = tiny_preset(dir, R"P([sweep]
name = "s"
runs = ["a: train.steps=5", "b: train.steps=6"]
grid = ["optim.lr=0.01@b"]
quick = ["train.steps=2", "train.steps=3@b"]
)P");
  const SweepSpec quick = load_sweep(preset, {}, {}, true);
  ASSERT_EQ(quick.runs.size(), 2u);
  EXPECT_EQ(quick.runs[0].overrides, (std::vector<std::string>{"train.steps=2", "train.steps=5"}));
  EXPECT_EQ(quick.runs[1].overrides,
            (std::vector<std::string>{"train.steps=2", "train.steps=6", "train.steps=3", "optim.lr=0.01"}));
  // Not under --quick.
  EXPECT_EQ(load_sweep(preset, {}, {}, false).runs[1].overrides,
            (std::vector<std::string>{"train.steps=6", "optim.lr=0.01"}));
  const std::string unknown = invalid_argument_message(
      [&] { load_sweep(tiny_preset(dir, "[sweep]\nruns = [\"a:\"]\nquick = [\"train.steps=2@z\"]\n"), {}, {}, true); });
  EXPECT_NE(unknown.find("names run 'z'"), std::string::npos) << unknown;
}

TEST(SweepSpec, BadSweepsAreRefusedBeforeAnyTrainingNamingTheProblem) {
  TempDir dir;
  auto msg = [&](const std::string& sweep) {
    return invalid_argument_message([&] { load_sweep(tiny_preset(dir, sweep), {}, {}, false); });
  };
  EXPECT_NE(msg("[sweep]\nrunz = []\n").find("unknown key 'runz'"), std::string::npos);
  EXPECT_NE(msg("[sweep]\nruns = [\"no colon here\"]\n").find("must look like"), std::string::npos);
  EXPECT_NE(msg("[sweep]\nruns = [\"a: x\"]\n").find("override 'x'"), std::string::npos);
  EXPECT_NE(msg("[sweep]\nruns = [\"a:\", \"a:\"]\n").find("two runs are named 'a'"), std::string::npos);
  const auto bad_value = msg("[sweep]\nruns = [\"bad: train.steps=-3\"]\n");
  EXPECT_NE(bad_value.find("run 'bad'"), std::string::npos) << bad_value;
  EXPECT_NE(bad_value.find("train.steps"), std::string::npos) << bad_value;
  EXPECT_NE(msg("[sweep]\nruns = [\"a:\"]\ngrid = [\"train.steps\"]\n").find("grid"), std::string::npos);
  EXPECT_NE(msg("[sweep]\nruns = [\"a:\"]\ngrid = [\"train.steps=1@b\"]\n").find("names run 'b'"), std::string::npos);
  EXPECT_NE(msg("[sweep]\nruns = [\"a:\"]\nbaseline = \"z\"\n").find("baseline 'z'"), std::string::npos);
  EXPECT_NE(msg("[sweep]\n[[sweep.claim]]\ntext = \"t\"\n").find("no check"), std::string::npos);
  EXPECT_NE(msg("").find("no [sweep] section"), std::string::npos);
  EXPECT_NE(msg("[sweep\n").find("TOML syntax error"), std::string::npos);
}

TEST(SweepSpec, TrainIgnoresTheSweepSectionOfAPreset) {
  TempDir dir;
  const auto preset = tiny_preset(dir, "[sweep]\nruns = [\"a: strategy.name=ddp\"]\n");
  EXPECT_EQ(load_config(preset, {}).strategy.name, "diloco");
}

std::map<std::string, RunMetrics> two_runs() {
  RunMetrics a, b;
  a.loss = 2.0;
  a.bytes = 1000;
  a.ttt = 10;
  b.loss = 2.1;
  b.bytes = 20;
  b.ttt = -1;  // no time (a sweep without target_loss; a missed target is censored, claims_test.cpp)
  return {{"a", a}, {"b-1.x", b}};
}

TEST(Claims, ComparisonsAndArithmeticOverRunMetrics) {
  std::string detail;
  EXPECT_TRUE(evaluate_claim("loss(a) < loss(b-1.x)", two_runs(), detail));
  EXPECT_EQ(detail, "loss(a)=2 < loss(b-1.x)=2.1");
  EXPECT_FALSE(evaluate_claim("loss(b-1.x) <= 1.04 * loss(a)", two_runs(), detail));
  EXPECT_TRUE(evaluate_claim("loss(b-1.x) <= 1.05 * loss(a)", two_runs(), detail));
  EXPECT_TRUE(evaluate_claim("bytes(a) / bytes(b-1.x) >= 50", two_runs(), detail));
  EXPECT_FALSE(evaluate_claim("bytes(a) / bytes(b-1.x) > 50", two_runs(), detail));
  EXPECT_TRUE(evaluate_claim("abs(loss(a) - loss(b-1.x)) < 0.1 + 1e-9", two_runs(), detail));
  EXPECT_TRUE(evaluate_claim("-(loss(a) - 3) * 2 >= min(1, 2) + max(0.5, -1)", two_runs(), detail));
  EXPECT_FALSE(evaluate_claim("ttt(b-1.x) <= 1e300", two_runs(), detail));  // no time = +inf
  EXPECT_NE(detail.find("ttt(b-1.x)=inf"), std::string::npos);
  EXPECT_TRUE(evaluate_claim("ttt(a) < ttt(b-1.x)", two_runs(), detail));
}

TEST(Claims, UpdateCorrelationAndDisagreementAreReadFromTheRunsSummary) {
  auto runs = two_runs();
  runs["a"].update_correlation = 0.4;
  runs["a"].disagreement = 0.8;
  runs["b-1.x"].update_correlation = 0.9;
  runs["b-1.x"].disagreement = 0.1;
  std::string detail;
  EXPECT_TRUE(evaluate_claim("update_correlation(a) < update_correlation(b-1.x)", runs, detail));
  EXPECT_EQ(detail, "update_correlation(a)=0.4 < update_correlation(b-1.x)=0.9");
  EXPECT_TRUE(evaluate_claim("disagreement(a) > 4 * disagreement(b-1.x)", runs, detail));
  EXPECT_FALSE(evaluate_claim("disagreement(a) < disagreement(b-1.x)", runs, detail));
  // A run that measured none (one worker, correlation_every = 0) is an error, not a quiet false.
  runs["a"].disagreement = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(invalid_argument_message([&] {
              evaluate_claim("disagreement(a) < 1", runs, detail);
            }).find("run 'a' has no disagreement"),
            std::string::npos);
}

TEST(Claims, CopySecondsIsTheCostModelsOneCopyTime) {
  // 7e9 bf16 parameters over 100 Mbit/s: 1.4e10 bytes / 1.25e7 B/s = 1120 s.
  std::string detail;
  EXPECT_TRUE(evaluate_claim("abs(copy_seconds(7e9, 2, 100e6) - 1120) < 1e-6", {}, detail));
}

TEST(Claims, MistakesAreReportedWithWhereTheyAre) {
  std::string d;
  EXPECT_NE(invalid_argument_message([&] { evaluate_claim("loss(zz) < 1", two_runs(), d); }).find("run 'zz'"),
            std::string::npos);
  EXPECT_NE(invalid_argument_message([&] { evaluate_claim("loss(a) 1", two_runs(), d); }).find("comparison"),
            std::string::npos);
  EXPECT_NE(
      invalid_argument_message([&] { evaluate_claim("lost(a) < 1", two_runs(), d); }).find("unknown function lost"),
      std::string::npos);
  EXPECT_NE(invalid_argument_message([&] { evaluate_claim("loss(a) < 1 )", two_runs(), d); }).find("column"),
            std::string::npos);
}

TEST(Sweep, RunsEveryRunThenKeepsFinishedOnesAndRefusesAChangedConfig) {
  TempDir dir;
  const std::string sweep = R"P([sweep]
name = "s"
runs = ["ddp: strategy.name=ddp", "diloco: strategy.name=diloco"]
[[sweep.claim]]
text = "runs finished"
check = "loss(ddp) > 0"
)P";
  const auto preset = tiny_preset(dir, sweep);
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  const SweepOutcome first = run_sweep(load_sweep(preset, {}, {}, false), opts);
  EXPECT_EQ(first.ran, 2);
  EXPECT_EQ(first.dir, dir.path("runs") + "/s");
  for (const auto& d : first.run_dirs) EXPECT_TRUE(fs::exists(fs::path(d) / "summary.json")) << d;
  EXPECT_EQ(load_run(first.run_dirs[0]).strategy, "ddp");
  EXPECT_EQ(load_run(first.run_dirs[1]).strategy, "diloco");

  // An interrupted run (folder without summary.json) is re-run; a finished one kept.
  fs::remove(fs::path(first.run_dirs[1]) / "summary.json");
  const SweepOutcome second = run_sweep(load_sweep(preset, {}, {}, false), opts);
  EXPECT_EQ(second.ran, 1);
  EXPECT_EQ(second.skipped, 1);

  // A changed preset is refused, naming the key, unless --overwrite.
  const auto summary_before = testing::read_text(fs::path(first.run_dirs[0]) / "summary.json");
  const SweepSpec changed = load_sweep(preset, {}, {"optim.lr=0.005"}, false);
  try {
    run_sweep(changed, opts);
    ADD_FAILURE() << "a changed config was not refused";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("optim.lr"), std::string::npos) << e.what();
  }
  EXPECT_EQ(testing::read_text(fs::path(first.run_dirs[0]) / "summary.json"), summary_before);
  opts.overwrite = true;
  opts.jobs = 2;
  EXPECT_EQ(run_sweep(changed, opts).ran, 2);
  EXPECT_EQ(load_run(first.run_dirs[0]).config.at("optim.lr"), "0.005");
}

TEST(Sweep, ARunAnotherSweepFolderAlreadyFinishedWithTheSameComputationIsCopiedNotTrainedAgain) {
  TempDir dir;
  const auto first = tiny_preset(
      dir, "[sweep]\nname = \"a\"\nruns = [\"ddp: strategy.name=ddp\", \"diloco: strategy.name=diloco\"]\n");
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  const SweepOutcome a = run_sweep(load_sweep(first, {}, {}, false), opts);
  ASSERT_EQ(a.ran, 2);
  // Another preset: one run is a's DiLoCo under another name, one differs in a key.
  const auto second = tiny_preset(dir,
                                  "[sweep]\nname = \"b\"\nruns = [\"same: strategy.name=diloco\", "
                                  "\"changed: strategy.name=diloco optim.lr=0.005\"]\n",
                                  "q.toml");
  const SweepOutcome b = run_sweep(load_sweep(second, {}, {}, false), opts);
  EXPECT_EQ(b.copied, 1);
  EXPECT_EQ(b.ran, 1);
  EXPECT_EQ(testing::read_text(fs::path(b.run_dirs[0]) / "summary.json"),
            testing::read_text(fs::path(a.run_dirs[1]) / "summary.json"));
  EXPECT_FALSE(fs::exists(b.run_dirs[0] + ".copying"));
  // The copy counts as finished with the sweep's config: the next call keeps it.
  EXPECT_EQ(run_sweep(load_sweep(second, {}, {}, false), opts).skipped, 2);
  // --no-reuse trains it, and atoll's bits make the trained run the copied one.
  fs::remove_all(b.run_dirs[0]);
  opts.reuse = false;
  const SweepOutcome again = run_sweep(load_sweep(second, {}, {}, false), opts);
  EXPECT_EQ(again.copied, 0);
  EXPECT_EQ(again.ran, 1);
  EXPECT_EQ(load_run(b.run_dirs[0]).final_val_loss, load_run(a.run_dirs[1]).final_val_loss);
}

// A run made before a key existed (its config.toml lacks it) still counts
// as finished when the key is one added with a default that computes what
// older runs computed (config/flat.cpp); any other missing key is a difference.
TEST(Sweep, ARunWrittenBeforeAKeyWasAddedCountsAtItsDefaultButNoOtherMissingKeyDoes) {
  TempDir dir;
  const auto preset = tiny_preset(dir, "[sweep]\nname = \"a\"\nruns = [\"d: strategy.name=diloco\"]\n");
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  const SweepSpec spec = load_sweep(preset, {}, {}, false);
  const SweepOutcome a = run_sweep(spec, opts);
  ASSERT_EQ(a.ran, 1);
  const fs::path config = fs::path(a.run_dirs[0]) / "config.toml";
  auto drop = [&](const std::string& start) {
    std::istringstream in(testing::read_text(config));
    std::string kept;
    for (std::string line; std::getline(in, line);)
      if (line.rfind(start, 0) != 0) kept += line + "\n";
    std::ofstream(config) << kept;
  };
  drop("chunk_topk = ");
  drop("divergence_check = ");
  EXPECT_EQ(finished_run_difference(spec, spec.runs[0], a.dir), "");
  EXPECT_EQ(run_sweep(spec, opts).skipped, 1);
  drop("topk_density = ");
  EXPECT_EQ(finished_run_difference(spec, spec.runs[0], a.dir), "codec.topk_density missing");
}

TEST(Sweep, AnInterruptedRunWithACheckpointIsResumedAndEndsLikeAnUninterruptedOne) {
  TempDir dir;
  const std::string runs = "runs = [\"d: train.steps=12\"]\n";
  const auto preset = tiny_preset(dir, "[sweep]\nname = \"s\"\n" + runs);
  const auto reference = tiny_preset(dir, "[sweep]\nname = \"ref\"\n" + runs, "ref.toml");
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  // Stopped after step 6 as on Ctrl-C: a checkpoint, no summary.json.
  const SweepOutcome first = run_sweep(load_sweep(preset, {}, {"run.stop_at=6"}, false), opts);
  const fs::path run_dir = first.run_dirs.at(0);
  ASSERT_FALSE(fs::exists(run_dir / "summary.json"));
  ASSERT_TRUE(fs::exists(run_dir / "checkpoints"));
  const SweepOutcome second = run_sweep(load_sweep(preset, {}, {}, false), opts);
  EXPECT_EQ(second.ran, 1);
  EXPECT_EQ(second.resumed, 1);
  const SweepOutcome whole = run_sweep(load_sweep(reference, {}, {}, false), opts);
  auto end_of = [](const fs::path& d) {
    return nlohmann::json::parse(testing::read_text(d / "summary.json")).at("end");
  };
  EXPECT_EQ(end_of(run_dir).at("params_hash_per_worker"), end_of(whole.run_dirs.at(0)).at("params_hash_per_worker"));
  EXPECT_EQ(end_of(run_dir).at("final_val_loss"), end_of(whole.run_dirs.at(0)).at("final_val_loss"));

  // Stopped again, then resumed with a changed setting: the checkpoint cannot
  // continue that run, so the sweep starts it again from step 0.
  fs::remove_all(run_dir);
  run_sweep(load_sweep(preset, {}, {"run.stop_at=6"}, false), opts);
  const SweepOutcome changed = run_sweep(load_sweep(preset, {}, {"optim.lr=0.005"}, false), opts);
  EXPECT_EQ(changed.ran, 1);
  EXPECT_EQ(changed.resumed, 0);
  EXPECT_EQ(load_run(run_dir.string()).config.at("optim.lr"), "0.005");
  EXPECT_TRUE(fs::exists(run_dir / "summary.json"));
}

TEST(Sweep, SigintStopsTheRunningRunWithACheckpointExits130AndTheNextSweepFinishesIt) {
  TempDir dir;
  const auto preset = tiny_preset(dir, "[sweep]\nname = \"c\"\nruns = [\"a: train.steps=1500\", \"b:\"]\n");
  const fs::path run_a = fs::path(dir.path("runs")) / "c" / "a";
  {
    testing::ChildProcess sweep(kAtoll, {"sweep", preset, "--no-report"}, dir.path("out"), dir.path("err"));
    // Interrupt once run a has logged a few lines (the terminal's Ctrl-C
    // reaches only the sweep: runs have process groups of their own).
    for (int i = 0; i < 6000; ++i) {
      const std::string metrics =
          fs::exists(run_a / "metrics.jsonl") ? testing::read_text(run_a / "metrics.jsonl") : "";
      if (std::count(metrics.begin(), metrics.end(), '\n') >= 4) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    sweep.signal(SIGINT);
    ASSERT_EQ(sweep.wait_exit(std::chrono::seconds(60)), 130) << sweep.err_text();
    EXPECT_NE(sweep.err_text().find("run the same command again"), std::string::npos) << sweep.err_text();
  }
  EXPECT_FALSE(fs::exists(run_a / "summary.json"));
  EXPECT_TRUE(fs::exists(run_a / "checkpoints"));
  EXPECT_FALSE(fs::exists(fs::path(dir.path("runs")) / "c" / "b"));  // never started
  testing::ChildProcess again(kAtoll, {"sweep", preset, "--no-report"}, dir.path("out2"), dir.path("err2"));
  ASSERT_EQ(again.wait_exit(std::chrono::seconds(120)), 0) << again.err_text();
  EXPECT_NE(again.out_text().find("sweep: a was interrupted; resuming after step"), std::string::npos)
      << again.out_text();
  EXPECT_TRUE(fs::exists(run_a / "summary.json"));
  EXPECT_TRUE(fs::exists(fs::path(dir.path("runs")) / "c" / "b" / "summary.json"));
}

TEST(Sweep, AFailingRunStopsTheSweepNamingTheRunAndItsLog) {
  TempDir dir;
  const auto preset = tiny_preset(dir, "[sweep]\nname = \"f\"\nruns = [\"broken: data.dir=/nonexistent\"]\n");
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  try {
    run_sweep(load_sweep(preset, {}, {}, false), opts);
    ADD_FAILURE() << "the failing run did not stop the sweep";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("run 'broken' failed"), std::string::npos) << what;
    EXPECT_NE(what.find("broken.log"), std::string::npos) << what;
    EXPECT_NE(testing::read_text(fs::path(dir.path("runs")) / "f" / "broken.log").find("/nonexistent"),
              std::string::npos);
  }
}

TEST(Sweep, AFolderTheSweepDidNotWriteIsNeverDeleted) {
  TempDir dir;
  const auto preset = tiny_preset(dir, "[sweep]\nname = \"k\"\nruns = [\"a:\"]\n");
  fs::create_directories(fs::path(dir.path("runs")) / "k" / "a");
  write((fs::path(dir.path("runs")) / "k" / "a" / "notes.txt").string(), "mine");
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  EXPECT_THROW(run_sweep(load_sweep(preset, {}, {}, false), opts), std::runtime_error);
  EXPECT_TRUE(fs::exists(fs::path(dir.path("runs")) / "k" / "a" / "notes.txt"));
}

// Settings a and b over seeds 1..3 (loss only).
SeedMetrics seeded(const std::vector<double>& a, const std::vector<double>& b) {
  SeedMetrics out;
  for (size_t k = 0; k < a.size(); ++k) {
    RunMetrics ra, rb;
    ra.loss = a[k];
    rb.loss = b[k];
    ra.seed = rb.seed = int64_t(k) + 1;
    out["a"].push_back(ra);
    out["b"].push_back(rb);
  }
  return out;
}

TEST(Claims, APairedDifferenceBelowZeroHoldsEvenWhenTheSeedsScatterMore) {
  // Seeds move both settings by far more than their difference; paired by
  // seed, a is 0.1 below b every time, so the claim holds.
  const ClaimVerdict v = judge_claim("loss(a) < loss(b)", seeded({1.0, 2.0, 3.0}, {1.1, 2.1, 3.1}), 0);
  EXPECT_EQ(v.outcome, ClaimVerdict::Holds) << v.detail;
  EXPECT_EQ(v.seeds, 3);
  EXPECT_NE(v.detail.find("(n=3 pairs)"), std::string::npos) << v.detail;
  EXPECT_EQ(judge_claim("loss(a) > loss(b)", seeded({1.0, 2.0, 3.0}, {1.1, 2.1, 3.1}), 0).outcome, ClaimVerdict::Fails);
  EXPECT_EQ(judge_claim("loss(b) <= loss(a)", seeded({1.0, 2.0, 3.0}, {1.1, 2.1, 3.1}), 0).outcome,
            ClaimVerdict::Fails);
}

TEST(Claims, ADifferenceWhoseIntervalStraddlesZeroOrOneSeedIsInconclusive) {
  // Differences -0.1, +0.05, -0.02: the interval contains 0.
  const ClaimVerdict v = judge_claim("loss(a) < loss(b)", seeded({1.0, 1.05, 0.98}, {1.1, 1.0, 1.0}), 0);
  EXPECT_EQ(v.outcome, ClaimVerdict::Inconclusive) << v.detail;
  const ClaimVerdict one = judge_claim("loss(a) < loss(b)", seeded({1.0}, {2.0}), 0);
  EXPECT_EQ(one.outcome, ClaimVerdict::Inconclusive) << one.detail;
  EXPECT_NE(one.detail.find("one seed gives no interval"), std::string::npos) << one.detail;
}

TEST(Claims, OnlySeedsEveryNamedSettingRanArePairedAndTheEffectIsJudged) {
  SeedMetrics runs = seeded({1.0, 2.0, 3.0}, {1.1, 2.1, 3.15});
  runs["b"].pop_back();  // b lacks seed 3: pairs are seeds 1 and 2
  const ClaimVerdict v = judge_claim("loss(a) + 0.05 < loss(b)", runs, 0.01);
  EXPECT_EQ(v.seeds, 2);
  EXPECT_EQ(v.outcome, ClaimVerdict::Holds) << v.detail;  // -0.05 both times: decided exactly
  EXPECT_NE(v.detail.find("resolves any effect"), std::string::npos) << v.detail;
  const ClaimVerdict wide = judge_claim("loss(a) < loss(b)", seeded({1.0, 1.3, 0.9}, {1.1, 1.35, 1.2}), 0.01);
  EXPECT_NE(wide.detail.find("does not resolve an effect of 0.01"), std::string::npos) << wide.detail;
  EXPECT_THROW(judge_claim("loss(c) < 1", runs, 0), std::invalid_argument);
}

TEST(SweepSpec, SeedsRepeatEveryRunWithConsecutiveSeedsInFoldersOfTheirOwn) {
  TempDir dir;
  const auto preset = tiny_preset(dir, "[sweep]\nruns = [\"ddp: strategy.name=ddp\", \"d: \"]\nseeds = 3\n");
  const SweepSpec spec = load_sweep(preset, {}, {"run.seed=40"}, false);
  EXPECT_EQ(names(spec), (std::vector<std::string>{"ddp_s1", "ddp_s2", "ddp_s3", "d_s1", "d_s2", "d_s3"}));
  for (size_t i = 0; i < spec.runs.size(); ++i) {
    EXPECT_EQ(spec.runs[i].seed, 40 + int64_t(i % 3));
    EXPECT_EQ(spec.runs[i].setting, i < 3 ? "ddp" : "d");
    EXPECT_EQ(spec.runs[i].overrides.back(), "run.seed=" + std::to_string(40 + i % 3));
  }
  // --seeds overrides the preset; one seed keeps the run's own folder name
  // and seed, so it is seed 1 of any larger sweep.
  const SweepSpec one = load_sweep(preset, {}, {"run.seed=40"}, false, 1);
  EXPECT_EQ(names(one), (std::vector<std::string>{"ddp", "d"}));
  EXPECT_EQ(one.runs[0].seed, 40);
  EXPECT_THROW(load_sweep(preset, {}, {}, false, 101), std::invalid_argument);
  const auto bad = tiny_preset(dir, "[sweep]\nseeds = 0\n", "bad.toml");
  EXPECT_THROW(load_sweep(bad, {}, {}, false), std::invalid_argument);
}

TEST(Results, VerdictsAreComputedFromTheRunFolders) {
  TempDir dir;
  const auto preset = tiny_preset(dir, R"P([sweep]
name = "v"
id = "R0"
title = "tiny"
paper_claim = "DDP and DiLoCo both learn."
runs = ["ddp: strategy.name=ddp", "diloco: strategy.name=diloco"]
baseline = "ddp"
seeds = 2
[[sweep.claim]]
text = "DiLoCo sends fewer bytes"
check = "bytes(diloco) < bytes(ddp)"
[[sweep.claim]]
text = "impossible"
check = "loss(ddp) < 0"
)P");
  const SweepSpec spec = load_sweep(preset, {}, {}, false);
  const std::string before = results_markdown({spec}, "");
  EXPECT_NE(before.find("| R0 | tiny | not run |"), std::string::npos) << before;
  SweepOptions opts;
  opts.exe = kAtoll;
  opts.quiet = true;
  run_sweep(spec, opts);
  const std::string md = results_markdown({spec}, "");
  EXPECT_NE(md.find("| R0 | tiny | partly reproduced |"), std::string::npos) << md;
  EXPECT_NE(md.find("- holds: DiLoCo sends fewer bytes"), std::string::npos) << md;
  EXPECT_NE(md.find("- **fails**: impossible"), std::string::npos) << md;
  EXPECT_NE(md.find("(1 of 2 checks hold, 1 fail, 0 equivalent, 0 inconclusive)"), std::string::npos) << md;
  // The table shows each setting's mean over its two seeds with its interval.
  const double a = load_run(dir.path("runs") + "/v/ddp_s1").final_val_loss;
  const double b = load_run(dir.path("runs") + "/v/ddp_s2").final_val_loss;
  const MeanInterval m = mean_interval({a, b});
  const std::string figure = "| ddp | 2 | ddp | 2 | 6 | " + format_mean_interval(m, 4) + " |";
  EXPECT_NE(md.find(figure), std::string::npos) << "the table shows the runs' mean loss " << figure << "\n" << md;
  // Every table renders: its delimiter row has as many cells as its header.
  std::istringstream lines(md);
  std::string previous, line;
  int tables = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("|---", 0) == 0) {
      ++tables;
      EXPECT_EQ(std::count(line.begin(), line.end(), '|'), std::count(previous.begin(), previous.end(), '|'))
          << previous << "\n"
          << line;
    }
    previous = line;
  }
  EXPECT_GE(tables, 2);
}

// Runs the atoll binary; returns its exit status and output.
int atoll_cli(const std::string& args, std::string& output, const TempDir& dir) {
  const std::string log = dir.path("cli.log");
  const int status = std::system((kAtoll + " " + args + " > '" + log + "' 2>&1").c_str());
  output = testing::read_text(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(SweepCli, SweepsThenWritesTheReportAndResultsFromTheFolders) {
  TempDir dir;
  const auto preset = tiny_preset(dir, R"P([sweep]
name = "c"
id = "R0"
title = "cli"
runs = ["ddp: strategy.name=ddp", "single: strategy.name=single strategy.workers=1"]
[[sweep.claim]]
text = "DDP sends bytes"
check = "bytes(ddp) > bytes(single)"
)P");
  std::string out;
  ASSERT_EQ(atoll_cli("sweep " + preset + " --train.steps=4", out, dir), 0) << out;
  EXPECT_NE(out.find("2 ran, 0 already finished"), std::string::npos) << out;
  const fs::path sweep = fs::path(dir.path("runs")) / "c";
  EXPECT_NE(testing::read_text(sweep / "report.html").find("<canvas id=\"loss-bytes\">"), std::string::npos);
  // The sweep's report has the what-if network sliders unless told otherwise.
  EXPECT_NE(testing::read_text(sweep / "report.html").find("id=\"whatif-bandwidth\""), std::string::npos);
  EXPECT_EQ(load_run((sweep / "ddp").string()).steps, 4);  // command-line overrides reach every run

  // `atoll results` reads the preset as it is: runs made with other settings
  // (here --train.steps=4) do not count for it.
  const std::string md = dir.path("RESULTS.md");
  ASSERT_EQ(atoll_cli("results " + preset + " -o " + md, out, dir), 0) << out;
  EXPECT_NE(testing::read_text(md).find("| R0 | cli | not run |"), std::string::npos) << testing::read_text(md);
  EXPECT_NE(testing::read_text(md).find("`ddp (train.steps = 4, the sweep says 6)`"), std::string::npos)
      << testing::read_text(md);
  ASSERT_EQ(atoll_cli("sweep " + preset + " --overwrite", out, dir), 0) << out;
  ASSERT_EQ(atoll_cli("results " + preset + " -o " + md, out, dir), 0) << out;
  // One seed per run gives no interval, so the check cannot decide.
  EXPECT_NE(testing::read_text(md).find("| R0 | cli | inconclusive |"), std::string::npos) << testing::read_text(md);

  ASSERT_EQ(atoll_cli("report " + (sweep / "ddp").string() + " " + (sweep / "single").string() + " -o " +
                          dir.path("r.html") + " --baseline=single --no-network-sliders",
                      out, dir),
            0)
      << out;
  EXPECT_NE(testing::read_text(dir.path("r.html")).find("<tr class=\"baseline\"><td>single</td>"), std::string::npos);
  EXPECT_EQ(testing::read_text(dir.path("r.html")).find("id=\"whatif"), std::string::npos);
}

TEST(SweepCli, APresetWithoutASweepSectionOrABadFolderIsAClearError) {
  TempDir dir;
  std::string out;
  const auto plain = tiny_preset(dir, "");
  EXPECT_EQ(atoll_cli("sweep " + plain, out, dir), 1);
  EXPECT_NE(out.find("atoll: error: " + plain + " has no [sweep] section"), std::string::npos) << out;
  // --grid may come before the preset; its axis reaches every run.
  const auto swept = tiny_preset(dir, "[sweep]\nruns = [\"a:\"]\n", "s.toml");
  EXPECT_EQ(atoll_cli("sweep --grid foo.bar=1,2 " + swept, out, dir), 1);
  EXPECT_NE(out.find("run 'a_bar1'"), std::string::npos) << out;
  EXPECT_NE(out.find("unknown key 'foo.bar'"), std::string::npos) << out;
  EXPECT_EQ(atoll_cli("report " + dir.path("nothing") + " -o " + dir.path("r.html"), out, dir), 1);
  EXPECT_NE(out.find("is not a finished run"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir.path("r.html")));
}

TEST(Presets, EveryShippedPresetLoadsAndNamesItsTarget) {
  std::set<std::string> ids;
  for (const auto& entry : fs::directory_iterator(std::string(ATOLL_SOURCE_DIR) + "/configs")) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".toml") continue;
    load_config(path, {});  // `atoll train <preset>` works
    if (testing::read_text(entry.path()).find("[sweep]") == std::string::npos) continue;
    // Every run of the sweep and of its --quick version is a valid config.
    const SweepSpec spec = load_sweep(path, {}, {}, false);
    const SweepSpec quick = load_sweep(path, {}, {}, true);
    EXPECT_EQ(spec.runs.size(), quick.runs.size()) << path;
    const std::string file = entry.path().filename().string();
    if (file.rfind("r", 0) != 0 || !std::isdigit(static_cast<unsigned char>(file[1]))) continue;
    // A quick run is shorter than its full one and stays meaningful: past
    // its DDP warm-up by at least two outer rounds (issue 35).
    for (size_t i = 0; i < quick.runs.size(); ++i) {
      const Config full = load_config(path, spec.runs[i].overrides);
      const Config q = load_config(path, quick.runs[i].overrides);
      const std::string run = path + ": " + quick.runs[i].name;
      EXPECT_LE(q.train.steps * q.train.batch_size, full.train.steps * full.train.batch_size) << run;
      const std::string m = q.strategy.name;
      int64_t h = 0, warmup = 0;
      if (m == "diloco" || m == "sparta_diloco" || m == "streaming") {
        h = q.diloco.inner_steps;
        warmup = q.diloco.ddp_warmup_steps;
      } else if (m == "palsgd") {
        h = q.palsgd.inner_steps;
        warmup = q.palsgd.ddp_warmup_steps;
      }
      if (h > 0) EXPECT_GE(q.train.steps - warmup, 2 * h) << run << ": fewer than two outer rounds after the warm-up";
    }
    EXPECT_FALSE(spec.paper_claim.empty()) << path;
    EXPECT_FALSE(spec.claims.empty()) << path;
    ids.insert(spec.id);
  }
  std::set<std::string> want;
  for (int i = 1; i <= 16; ++i) want.insert("R" + std::to_string(i));
  EXPECT_EQ(ids, want);
}

}  // namespace
}  // namespace atl
