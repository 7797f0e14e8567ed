// The CLI under SIGKILL and SIGTERM: a run killed at random moments (also
// mid-write) never leaves a torn checkpoint, and resuming it again and again
// ends bitwise where the run that was never killed ends.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "atoll/train.h"
#include "child_process.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/checkpoint.h"
#include "train/checkpoint_file.h"
#include "util/file_io.h"
#include "util/rng.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using testing::kAtoll;

Config kill_config(const std::string& out_dir) {
  Config cfg = tiny_config("diloco", 2);
  cfg.run.out_dir = out_dir;
  cfg.train.steps = 400;
  cfg.train.eval_every = 100;
  cfg.train.log_every = 10;
  cfg.diloco.inner_steps = 7;
  cfg.run.checkpoint_every = 3;
  cfg.run.keep_checkpoints = 2;
  cfg.network.compute_time = "flops";
  return cfg;
}

std::string write_config(const testing::TempDir& tmp, Config cfg) { return tmp.write("run.toml", to_toml(cfg)); }

nlohmann::json end_event(const fs::path& dir) {
  std::ifstream in(dir / "summary.json");
  return nlohmann::json::parse(in).at("end");
}

// Every checkpoint file on disk parses (checksum included); returns how many.
int check_every_checkpoint_file(const fs::path& run_dir) {
  int files = 0;
  const fs::path folder = run_dir / "checkpoints";
  if (!fs::exists(folder)) return 0;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (entry.path().extension() != ".ckpt") continue;  // *.ckpt.tmp: an unfinished write, never read
    EXPECT_NO_THROW(parse_checkpoint(read_file_bytes(entry.path().string()))) << entry.path();
    ++files;
  }
  return files;
}

TEST(KillLoop, SigkillAtRandomMomentsNeverLeavesATornCheckpointAndResumingEndsBitwiseLikeTheWholeRun) {
  testing::TempDir tmp;
  Config cfg = kill_config(tmp.str());
  cfg.run.name = "whole";
  train(cfg);
  cfg.run.name = "killed";
  const std::string path = write_config(tmp, cfg);
  const fs::path dir = tmp.path("killed");

  uint64_t rng = 2026;
  int kills = 0, files_checked = 0, resumed = 0;
  bool finished = false;
  for (int round = 0; round < 16 && !finished; ++round) {
    const int64_t before = latest_checkpoint(cfg);
    resumed += before >= 0;
    testing::ChildProcess run(kAtoll, {"train", path, before >= 0 ? "--resume" : "--overwrite"}, tmp.path("out"),
                              tmp.path("err"));
    // Kill at a random moment after the run has completed a new checkpoint
    // (so every round makes progress, however slow the build), within the
    // next ~12 checkpoint writes, often in the middle of one.
    int code = -1;
    for (int i = 0; i < 24000 && code == -1; ++i) {
      if (latest_checkpoint(cfg) > before) break;  // a whole new checkpoint
      code = run.wait_exit(5ms);
    }
    if (code == -1) code = run.wait_exit(std::chrono::milliseconds(splitmix64(rng) % 250));
    if (code == -1) {
      run.signal(SIGKILL);
      code = run.wait_exit(10s);  // 0 when it exited just before the signal
      if (code == 128 + SIGKILL) {
        ++kills;
        // Killed after it wrote summary.json (while exiting): the run is
        // complete, and resuming it would rightly be refused.
        finished = fs::exists(dir / "summary.json");
      }
    }
    if (code != 128 + SIGKILL) {
      ASSERT_EQ(code, 0) << run.err_text();
      finished = true;
    }
    files_checked += check_every_checkpoint_file(dir);
  }
  if (!finished) {
    const bool can_resume = latest_checkpoint(cfg) >= 0;
    testing::ChildProcess run(kAtoll, {"train", path, can_resume ? "--resume" : "--overwrite"}, tmp.path("out"),
                              tmp.path("err"));
    ASSERT_EQ(run.wait_exit(120s), 0) << run.err_text();
  }
  std::printf("kill loop: %d SIGKILLs, %d resumes, %d checkpoint files checked, none torn\n", kills, resumed,
              files_checked);
  EXPECT_GE(kills, 6);
  EXPECT_GE(resumed, 5);
  const auto whole = end_event(tmp.path("whole")), killed = end_event(dir);
  EXPECT_EQ(killed.at("params_hash_per_worker"), whole.at("params_hash_per_worker"));
  EXPECT_EQ(killed.at("final_val_loss"), whole.at("final_val_loss"));
  EXPECT_EQ(killed.at("ledger_per_worker"), whole.at("ledger_per_worker"));
  EXPECT_EQ(killed.at("sim_time_s"), whole.at("sim_time_s"));
}

// Every point where a write commits (each fsync and rename the CLI makes,
// found by counting them in a whole run), killed just before or just after:
// the run resumes from what is on disk and ends bitwise like the run that
// was never killed. The kills come from an LD_PRELOAD shim
// (tests/kill_at_sync.c), so atoll has no test hook.
TEST(KillAtEveryWrite, AKillAtAnyFsyncOrRenameLeavesARunThatResumesToTheSameEnd) {
  testing::TempDir tmp;
  Config cfg = kill_config(tmp.str());
  cfg.train.steps = 12;
  cfg.train.eval_every = 6;
  cfg.train.log_every = 1;
  cfg.diloco.inner_steps = 3;
  cfg.run.checkpoint_every = 3;
  cfg.run.name = "whole";
  train(cfg);
  cfg.run.name = "killed";
  const std::string path = write_config(tmp, cfg);
  const fs::path dir = tmp.path("killed");
  const std::string shim = ATOLL_KILL_AT_SYNC;
  // How many commit points a whole run has.
  {
    testing::ChildProcess count(kAtoll, {"train", path}, tmp.path("out"), tmp.path("err"),
                                {{"LD_PRELOAD", shim}, {"ATOLL_TEST_KILL_COUNT_FILE", tmp.path("count")}});
    ASSERT_EQ(count.wait_exit(120s), 0) << count.err_text();
  }
  const int points = std::stoi(testing::read_text(tmp.path("count")));
  ASSERT_GT(points, 10) << "the shim saw too few fsync/rename calls: is it preloaded?";
  // Twelve of them, spread over the run, alternately before and after
  // (ATOLL_TEST_KILL_EVERY_POINT=1: every one of them, before and after).
  const bool every = std::getenv("ATOLL_TEST_KILL_EVERY_POINT") != nullptr;
  const int tries = every ? 2 * points : std::min(points, 12);
  int resumed = 0;
  for (int k = 0; k < tries; ++k) {
    const int at = every ? k / 2 + 1 : 1 + int(int64_t(k) * (points - 1) / std::max(1, tries - 1));
    const bool after = k % 2 == 1;
    SCOPED_TRACE("killed at commit point " + std::to_string(at) + (after ? " (after it)" : " (before it)"));
    {
      testing::ChildProcess run(kAtoll, {"train", path, "--overwrite"}, tmp.path("out"), tmp.path("err"),
                                {{"LD_PRELOAD", shim},
                                 {"ATOLL_TEST_KILL_AT", std::to_string(at)},
                                 {"ATOLL_TEST_KILL_AFTER", after ? "1" : "0"}});
      ASSERT_EQ(run.wait_exit(120s), 128 + SIGKILL) << run.err_text();
    }
    check_every_checkpoint_file(dir);
    if (fs::exists(dir / "summary.json")) continue;  // killed while finishing: the run is complete
    const bool can_resume = latest_checkpoint(cfg) >= 0;
    resumed += can_resume;
    testing::ChildProcess run(kAtoll, {"train", path, can_resume ? "--resume" : "--overwrite"}, tmp.path("out"),
                              tmp.path("err"));
    ASSERT_EQ(run.wait_exit(120s), 0) << run.err_text();
    const auto whole = end_event(tmp.path("whole")), killed = end_event(dir);
    EXPECT_EQ(killed.at("params_hash_per_worker"), whole.at("params_hash_per_worker"));
    EXPECT_EQ(killed.at("final_val_loss"), whole.at("final_val_loss"));
    EXPECT_EQ(killed.at("ledger_per_worker"), whole.at("ledger_per_worker"));
  }
  std::printf(
      "kill at every write: %d commit points (fsync, rename) in a run; killed at %d of them, %d resumed "
      "from a checkpoint, every one ended like the whole run\n",
      points, tries, resumed);
  EXPECT_GE(resumed, tries / 2);
}

TEST(StopSignal, SigtermStopsWithACheckpointAndExit130AndResumeFinishesTheRunExactly) {
  testing::TempDir tmp;
  Config cfg = kill_config(tmp.str());
  cfg.run.checkpoint_every = 0;  // the only checkpoint is the one the signal asks for
  cfg.run.name = "whole";
  train(cfg);
  cfg.run.name = "stopped";
  const std::string path = write_config(tmp, cfg);
  const fs::path dir = tmp.path("stopped");
  {
    testing::ChildProcess run(kAtoll, {"train", path}, tmp.path("out"), tmp.path("err"));
    // Signal once training is under way (a few train lines logged).
    for (int i = 0; i < 3000; ++i) {
      std::ifstream in(dir / "metrics.jsonl");
      std::string text((std::istreambuf_iterator<char>(in)), {});
      if (std::count(text.begin(), text.end(), '\n') >= 4) break;
      std::this_thread::sleep_for(5ms);
    }
    run.signal(SIGTERM);
    ASSERT_EQ(run.wait_exit(60s), 130) << run.err_text();
    EXPECT_NE(run.out_text().find("continue with the same command and --resume"), std::string::npos) << run.out_text();
  }
  EXPECT_FALSE(fs::exists(dir / "summary.json"));
  const auto steps = CheckpointStore(dir).steps();
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_GT(steps[0], 0);
  EXPECT_LT(steps[0], cfg.train.steps);
  testing::ChildProcess run(kAtoll, {"train", path, "--resume"}, tmp.path("out"), tmp.path("err"));
  ASSERT_EQ(run.wait_exit(120s), 0) << run.err_text();
  EXPECT_EQ(end_event(dir).at("params_hash_per_worker"), end_event(tmp.path("whole")).at("params_hash_per_worker"));
}

// Real runs (two processes over Gloo, started by `atoll launch`).

// Child processes of `parent` (from /proc).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    long long ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent) out.push_back(static_cast<pid_t>(std::stoll(name)));
  }
  return out;
}

TEST(RealRunResume, ATwoProcessRunStoppedAndResumedEndsBitwiseLikeTheSimulatedRun) {
  testing::TempDir tmp;
  Config cfg = kill_config(tmp.str());
  cfg.train.steps = 60;
  cfg.run.name = "simulated";
  train(cfg);
  cfg.run.name = "real";
  const std::string path = write_config(tmp, cfg);
  {
    testing::ChildProcess first(kAtoll, {"launch", "--nproc=2", path, "--run.stop_at=25"}, tmp.path("out1"),
                                tmp.path("err1"));
    ASSERT_EQ(first.wait_exit(120s), 0) << first.err_text() << first.out_text();
    EXPECT_NE(first.out_text().find("stopped after step 25"), std::string::npos) << first.out_text();
  }
  testing::ChildProcess second(kAtoll, {"launch", "--nproc=2", path, "--resume"}, tmp.path("out2"), tmp.path("err2"));
  ASSERT_EQ(second.wait_exit(120s), 0) << second.err_text() << second.out_text();
  const auto real = end_event(tmp.path("real")), simulated = end_event(tmp.path("simulated"));
  EXPECT_EQ(real.at("params_hash_per_worker"), simulated.at("params_hash_per_worker"));
  EXPECT_EQ(real.at("final_val_loss"), simulated.at("final_val_loss"));
}

TEST(MaxRestarts, ARankKilledMidRunIsRestartedFromTheLastCheckpointAndTheRunEndsExactly) {
  testing::TempDir tmp;
  Config cfg = kill_config(tmp.str());
  cfg.train.steps = 300;
  cfg.run.name = "simulated";
  train(cfg);
  cfg.run.name = "real";
  const std::string path = write_config(tmp, cfg);
  testing::ChildProcess launcher(kAtoll, {"launch", "--nproc=2", "--max-restarts=2", "--grace=2", path},
                                 tmp.path("out"), tmp.path("err"));
  const CheckpointStore store(tmp.path("real"));
  for (int i = 0; i < 6000 && store.latest_complete({"driver", worker_part(0), worker_part(1)}, nullptr) < 30; ++i)
    std::this_thread::sleep_for(10ms);
  const auto ranks = children_of(launcher.pid());
  ASSERT_EQ(ranks.size(), 2u);
  kill(ranks[1], SIGKILL);
  ASSERT_EQ(launcher.wait_exit(180s), 0) << launcher.err_text();
  EXPECT_NE(launcher.err_text().find("restarting the job (1 of 2)"), std::string::npos) << launcher.err_text();
  EXPECT_NE(launcher.err_text().find("resuming from the checkpoint of step"), std::string::npos) << launcher.err_text();
  EXPECT_EQ(end_event(tmp.path("real")).at("params_hash_per_worker"),
            end_event(tmp.path("simulated")).at("params_hash_per_worker"));
}

}  // namespace
}  // namespace atl
