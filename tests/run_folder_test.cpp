// The resume policy (run.resume = false | true | auto), decided in one place
// (plan_start / resolve_start in src/train/run_folder.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "atoll/setup.h"
#include "atoll/train.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/run_folder.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

Config policy_config(const std::string& out_dir) {
  Config cfg = tiny_config("diloco", 2);
  cfg.run.out_dir = out_dir;
  cfg.train.steps = 12;
  cfg.train.log_every = 3;
  cfg.train.eval_every = 6;
  cfg.diloco.inner_steps = 3;
  cfg.network.compute_time = "flops";
  return cfg;
}

TEST(ResumePolicy, AutoContinuesAStoppedRunAndEndsLikeTheUninterruptedOne) {
  testing::TempDir tmp;
  Config cfg = policy_config(tmp.str());
  cfg.run.name = "whole";
  const RunSummary whole = train(cfg);

  cfg.run.name = "stopped";
  cfg.run.stop_at = 6;
  ASSERT_EQ(train(cfg).stopped_at, 6);
  cfg.run.stop_at = 0;
  cfg.run.resume = "auto";
  const StartPlan plan = plan_start(cfg);
  EXPECT_TRUE(plan.resume);
  EXPECT_EQ(plan.step, 6);
  const RunSummary resumed = train(cfg);
  EXPECT_EQ(resumed.stopped_at, -1);
  EXPECT_EQ(resumed.final_val_loss, whole.final_val_loss);
  EXPECT_EQ(resumed.sim_seconds, whole.sim_seconds);
}

TEST(ResumePolicy, AutoStartsAgainWhenAnInterruptedRunHasNoCheckpointOrTheFolderIsNew) {
  testing::TempDir tmp;
  Config cfg = policy_config(tmp.str());
  cfg.run.resume = "auto";
  cfg.run.name = "new";
  const StartPlan fresh = plan_start(cfg);  // no folder at all
  EXPECT_FALSE(fresh.resume);
  EXPECT_FALSE(fresh.replace);
  EXPECT_NE(fresh.why.find("holds no run"), std::string::npos) << fresh.why;
  EXPECT_EQ(train(cfg).stopped_at, -1);

  // A run that died before its first checkpoint: config.toml, metrics, no summary.
  cfg.run.name = "died";
  create_run_folder(cfg, false);
  std::ofstream(tmp.path("died") + "/metrics.jsonl") << "{\"event\": \"start\"}\n";
  const StartPlan again = plan_start(cfg);
  EXPECT_FALSE(again.resume);
  EXPECT_TRUE(again.replace);
  EXPECT_NE(again.why.find("no complete checkpoint"), std::string::npos) << again.why;
  EXPECT_EQ(train(cfg).stopped_at, -1);
  EXPECT_TRUE(fs::exists(tmp.path("died") + "/summary.json"));
}

TEST(ResumePolicy, AFinishedRunIsNeverReplacedWithoutOverwriteAndTrueExplainsWhyItCannotResume) {
  testing::TempDir tmp;
  Config cfg = policy_config(tmp.str());
  cfg.run.name = "done";
  train(cfg);
  for (const char* mode : {"false", "auto"}) {
    cfg.run.resume = mode;
    EXPECT_FALSE(plan_start(cfg).replace) << mode;
    try {
      train(cfg);
      ADD_FAILURE() << mode << ": a finished run folder was replaced";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos) << e.what();
    }
  }
  cfg.run.resume = "true";
  try {
    plan_start(cfg);
    ADD_FAILURE() << "resume = true on a finished run did not throw";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("has finished"), std::string::npos) << e.what();
  }
  cfg.run.resume = "auto";
  cfg.run.overwrite = true;
  EXPECT_TRUE(plan_start(cfg).replace);
}

TEST(ResumePolicy, RealRanksPoolWhatTheyHoldTheSameWayAsASimulation) {
  testing::TempDir tmp;
  Config cfg = policy_config(tmp.str());
  cfg.run.resume = "auto";
  // Rank 0 found the folder resumable and every rank holds step 9: resume there.
  StartPlan p = resolve_start(cfg, "", 9);
  EXPECT_TRUE(p.resume);
  EXPECT_EQ(p.step, 9);
  // No step held by every rank: start again (auto), fail naming why (true).
  p = resolve_start(cfg, "", -1);
  EXPECT_FALSE(p.resume);
  EXPECT_NE(p.why.find("no checkpoint step is intact on every rank"), std::string::npos) << p.why;
  cfg.run.resume = "true";
  EXPECT_THROW(resolve_start(cfg, "", -1), std::runtime_error);
  EXPECT_THROW(resolve_start(cfg, "rank 0 could not start the run: x", 9), std::runtime_error);
  cfg.run.resume = "false";
  EXPECT_FALSE(resolve_start(cfg, "", 9).resume);  // false never resumes
}

TEST(ResumePolicy, TomlBooleansStillSetRunResume) {
  Config cfg;
  std::vector<std::string> errors;
  apply_toml(cfg, "[run]\nresume = true\n", "t.toml", errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(cfg.run.resume, "true");
  apply_toml(cfg, "[run]\nresume = \"auto\"\n", "t.toml", errors);
  EXPECT_EQ(cfg.run.resume, "auto");
  apply_toml(cfg, "[data]\ndataset = true\n", "t.toml", errors);  // other strings stay strict
  EXPECT_EQ(errors.size(), 1u);
  cfg.run.resume = "maybe";
  EXPECT_FALSE(validate(cfg).empty());
}

}  // namespace
}  // namespace atl
