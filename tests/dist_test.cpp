// Real runs in real processes: `atoll train` ranks over Gloo on 127.0.0.1
// equal the simulator bitwise, a killed rank is named by the survivor within
// the timeout, and mismatched configs are refused before training.
// Every wait here has a deadline: distributed bugs hang rather than fail.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "atoll/config.h"
#include "atoll/launch.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "every_strategy.h"
#include "test_util.h"
#include "tiny_data.h"
#include "train/timing_files.h"
#include "util/file_io.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

using testing::kAtoll;

// Config overrides ("key=value") of a tiny run exercising `method`'s
// mechanism within 12 steps on the generated text: a method of the table, or
// a variant (streaming_eager: Streaming DiLoCo with eager updates).
std::vector<std::string> tiny_overrides(const std::string& method, const std::string& out_dir,
                                        const std::string& name) {
  const bool eager = method == "streaming_eager";
  const std::string strategy = eager ? "streaming" : method;
  const std::vector<std::string> all = {
      "data.dataset=text", "data.dir=" + tiny_text_dir(), "model.n_layer=2", "model.n_head=2", "model.n_embd=16",
      "model.block_size=16", "optim.warmup_steps=2", "train.steps=12", "train.batch_size=4", "train.eval_every=6",
      "train.eval_batches=2", "train.log_every=3", "strategy.name=" + strategy, "strategy.workers=2",
      "strategy.correlation_every=6", "diloco.inner_steps=4", "noloco.inner_steps=4", "palsgd.inner_steps=4",
      "palsgd.ddp_warmup_steps=2", "desloc.param_period=2", "sparta.p=0.05", "streaming.fragment_blocks=1",
      "run.progress=false", "run.out_dir=" + out_dir, "run.name=" + name,
      // Both drivers run the divergence check (real runs do by default), so
      // its all-gathers are in both ledgers and clocks.
      "run.divergence_check=on",
      // Modelled compute and a 10 Mbit/s, 5 ms network: compute and network
      // time are then deterministic and must agree between the drivers too.
      "network.compute_time=flops", "network.bandwidth=10Mbit/s", "network.latency=5ms"};
  // Each method's keys only for a method that reads them: an override the
  // chosen method does not read is refused (atoll/setup.h).
  Config chosen;
  chosen.strategy.name = strategy;
  std::vector<std::string> out;
  for (const auto& o : all)
    if (unread_key_problem(chosen, o.substr(0, o.find('='))).empty()) out.push_back(o);
  if (eager) {  // F = 2 all-reduces in flight across the observer's collectives; the divergence check skipped
    out.push_back("streaming.eager=true");
    out.push_back("streaming.overlap=0");
  }
  return out;
}

std::vector<std::string> as_flags(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  for (const auto& o : overrides) out.push_back("--" + o);
  return out;
}

// `atoll launch --nproc=nproc` of `atoll train` with these overrides; its
// standard error in `err`.
LaunchResult launch_train(int64_t nproc, const std::vector<std::string>& overrides, std::string& err) {
  LaunchOptions opts;
  opts.nproc = nproc;
  opts.grace_seconds = 2;
  opts.argv = {kAtoll, "train", "--dist-timeout=60"};
  for (const auto& f : as_flags(overrides)) opts.argv.push_back(f);
  std::ostringstream out, errors;
  opts.out = &out;
  opts.err = &errors;
  const LaunchResult r = launch_local(opts);
  err = errors.str();
  return r;
}

std::vector<nlohmann::json> read_events(const std::string& run_dir) {
  std::vector<nlohmann::json> out;
  std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// ---------------------------------------------------------------------------
// Equivalence with the simulator

class RealEqualsSimulated : public ::testing::TestWithParam<std::string> {};

// N = 2: every reduction has two operands, and a + b is the same in either
// order, so the real run must reproduce the simulator bit for bit: losses,
// bytes, correlation, every worker's final parameters (hashed), modelled
// compute and network time. Not sim_time_s: a real rank's clock starts each
// op at its own arrival (waiting for a slower peer is measured, not
// modelled), so it differs where ranks compute different amounts (PALSGD).
TEST_P(RealEqualsSimulated, TwoRanksOverGlooMatchTheSimulatorBitwise) {
  const std::string strategy = GetParam();
  testing::TempDir dir;
  const Config cfg = load_config("", tiny_overrides(strategy, dir.str(), "sim"));
  const RunSummary sim = train(cfg);

  std::string err;
  const LaunchResult r = launch_train(2, tiny_overrides(strategy, dir.str(), "real"), err);
  ASSERT_EQ(r.exit_code, 0) << r.error << "\n" << err;

  const auto want = read_events(sim.run_dir), got = read_events(dir / "real");
  ASSERT_EQ(got.size(), want.size());
  int compared = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_EQ(got[k]["event"], want[k]["event"]);
    for (const char* key :
         {"loss", "val_loss", "bytes_sent_per_worker", "bytes_received_per_worker", "correlation",
          "params_hash_per_worker", "bytes_sent_by_tag_total", "compute_s", "network_model_s_per_worker"}) {
      if (!want[k].contains(key)) continue;
      EXPECT_EQ(got[k][key], want[k][key]) << strategy << " event " << k << " (" << want[k]["event"] << ") " << key;
      ++compared;
    }
  }
  EXPECT_GT(compared, 20);
  // Every rank recorded the same clock consumption as its simulated worker,
  // so atoll retime of a real run gives the simulator's clock on any network.
  for (int64_t rank = 0; rank < 2; ++rank)
    EXPECT_EQ(read_file_bytes(timing_trace_path(dir / "real", rank).string()),
              read_file_bytes(timing_trace_path(sim.run_dir, rank).string()))
        << strategy << ": rank " << rank << "'s timing trace";
  EXPECT_EQ(got.front()["mode"], "real");
  EXPECT_EQ(want.front()["mode"], "simulated");
  // Real runs report measured times next to the ledger's bytes.
  EXPECT_TRUE(got.back().contains("comm_wall_s_per_worker"));
  EXPECT_TRUE(got.back().contains("compute_wall_s_per_worker"));
}

// Every method of the table but those testing::not_run_on_two_ranks() names.
INSTANTIATE_TEST_SUITE_P(EveryStrategy, RealEqualsSimulated,
                         ::testing::ValuesIn(testing::every_strategy(testing::not_run_on_two_ranks())),
                         testing::method_test_name);
INSTANTIATE_TEST_SUITE_P(Variants, RealEqualsSimulated, ::testing::Values("streaming_eager"),
                         testing::method_test_name);

// The stop at step 6 finds both fragments' all-reduces in flight (started
// after steps 5 and 3, waited after 9 and 7): the checkpoint must finish each
// Gloo transfer before it saves the buffer, so what resumes is the mean, not
// a partial sum. Resumed, the real run still equals the simulator's.
TEST(RealRun, EagerStreamingStoppedWithAllReducesInFlightResumesBitwiseLikeTheSimulator) {
  testing::TempDir dir;
  const RunSummary sim = train(load_config("", tiny_overrides("streaming_eager", dir.str(), "sim")));
  auto overrides = tiny_overrides("streaming_eager", dir.str(), "real");
  overrides.push_back("run.stop_at=6");
  std::string err;
  LaunchResult r = launch_train(2, overrides, err);
  ASSERT_EQ(r.exit_code, 0) << r.error << "\n" << err;
  ASSERT_FALSE(fs::exists(fs::path(dir / "real") / "summary.json"));
  overrides.back() = "run.resume=true";
  r = launch_train(2, overrides, err);
  ASSERT_EQ(r.exit_code, 0) << r.error << "\n" << err;
  const auto want = read_events(sim.run_dir), got = read_events(dir / "real");
  ASSERT_EQ(got.size(), want.size());
  int compared = 0;
  for (size_t k = 0; k < want.size(); ++k)
    for (const char* key : {"loss", "val_loss", "bytes_sent_per_worker", "params_hash_per_worker"}) {
      if (!want[k].contains(key)) continue;
      EXPECT_EQ(got[k][key], want[k][key]) << "event " << k << " (" << want[k]["event"] << ") " << key;
      ++compared;
    }
  EXPECT_GT(compared, 10);
}

// Islands on Gloo: 2 islands of 2 ranks, the island groups carrying the
// gradients and the cross-island groups the method. Every group has two
// ranks, so again each reduction is a + b and the real run must equal the
// simulated one bit for bit, split bytes included.
class RealIslandsEqualSimulated : public ::testing::TestWithParam<const char*> {};

TEST_P(RealIslandsEqualSimulated, TwoIslandsOfTwoRanksOverGlooMatchTheSimulatorBitwise) {
  const std::string strategy = GetParam();
  testing::TempDir dir;
  auto overrides = [&](const std::string& name) {
    auto o = tiny_overrides(strategy, dir.str(), name);
    for (const char* more : {"strategy.workers=4", "islands.count=2", "islands.exchange=leader",
                             "network.intra_bandwidth=1Gbit/s", "network.intra_latency=1ms"})
      o.push_back(more);
    return o;
  };
  const RunSummary sim = train(load_config("", overrides("sim")));
  std::string err;
  const LaunchResult r = launch_train(4, overrides("real"), err);
  ASSERT_EQ(r.exit_code, 0) << r.error << "\n" << err;

  const auto want = read_events(sim.run_dir), got = read_events(dir / "real");
  ASSERT_EQ(got.size(), want.size());
  int compared = 0;
  for (size_t k = 0; k < want.size(); ++k) {
    for (const char* key :
         {"loss", "val_loss", "bytes_sent_per_worker", "intra_bytes_sent_per_worker", "params_hash_per_worker",
          "compute_s", "network_model_s_per_worker", "intra_network_model_s_per_worker"}) {
      if (!want[k].contains(key)) continue;
      EXPECT_EQ(got[k][key], want[k][key]) << strategy << " event " << k << " (" << want[k]["event"] << ") " << key;
      ++compared;
    }
  }
  EXPECT_GT(compared, 20);
  EXPECT_EQ(got.front()["islands"], 2);
  EXPECT_GT(want.back()["intra_bytes_sent_per_worker"].get<double>(), 0);
}

INSTANTIATE_TEST_SUITE_P(AcrossIslands, RealIslandsEqualSimulated, ::testing::Values("diloco", "sparta"),
                         [](const auto& p) { return std::string(p.param); });

// The CLI end to end: `atoll launch` runs `atoll train` as every rank, and
// rank 0's run folder records a real run with measured times.
TEST(LaunchCli, TwoRanksTrainAndRankZeroWritesTheRunFolder) {
  testing::TempDir dir;
  std::string cmd = kAtoll + " launch --nproc=2 --grace=2";
  for (const auto& f : as_flags(tiny_overrides("diloco", dir.str(), "cli"))) cmd += " '" + f + "'";
  const std::string log = dir / "launch.log";
  ASSERT_EQ(std::system((cmd + " > '" + log + "' 2>&1").c_str()), 0) << cmd;
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(out.find("[rank 0] done: final val loss"), std::string::npos) << out;
  EXPECT_NE(out.find("[rank 0] communication per worker: measured"), std::string::npos) << out;
  const auto events = read_events(dir / "cli");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front()["mode"], "real");
  EXPECT_EQ(events.back()["ledger_per_worker"].size(), 2u);
  EXPECT_TRUE(fs::exists(dir / "cli/summary.json"));
}

TEST(LaunchCli, ARankFailingAtStartUpFailsTheLaunchWithItsError) {
  testing::TempDir dir;
  std::string cmd = kAtoll + " launch --nproc=2 --grace=2";
  for (const auto& f : as_flags(tiny_overrides("diloco", dir.str(), "cli"))) cmd += " '" + f + "'";
  cmd += " --model.n_embd=15";  // not a multiple of n_head: every rank refuses the config
  const std::string log = dir / "launch.log";
  const int status = std::system((cmd + " > '" + log + "' 2>&1").c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::ifstream in(log);
  const std::string out((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(out.find("atoll launch: rank "), std::string::npos) << out;
  EXPECT_NE(out.find("model.n_embd must be a positive multiple of model.n_head"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(dir / "cli"));
}

// ---------------------------------------------------------------------------
// Failure

// One `atoll train` rank started by hand (not through the launcher, which
// would stop the survivor itself): stdout and stderr go to files.
struct Rank {
  pid_t pid = -1;
  std::string out, err;

  Rank(int64_t rank, int64_t world, int port, const std::vector<std::string>& args, const testing::TempDir& dir) {
    out = dir / ("rank" + std::to_string(rank) + ".out");
    err = dir / ("rank" + std::to_string(rank) + ".err");
    pid = fork();
    if (pid == 0) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      dup2(open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 1);
      dup2(open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), 2);
      std::vector<char*> argv{const_cast<char*>(kAtoll.c_str()), const_cast<char*>("train")};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Rank() {
    if (pid > 0 && waitpid(pid, nullptr, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
  // Exit status once the process ends, or -1 if it is still running at the deadline.
  int wait_exit(std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(50ms);
    }
    return -1;
  }
  std::string stderr_text() const {
    std::ifstream in(err);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

// Waits until the run folder's metrics show a train event (training is under way).
bool training_started(const std::string& run_dir, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    std::ifstream in(fs::path(run_dir) / "metrics.jsonl");
    for (std::string line; std::getline(in, line);)
      if (line.find("\"event\":\"train\"") != std::string::npos) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

class KilledRank : public ::testing::TestWithParam<int> {};

TEST_P(KilledRank, SurvivorExitsWithinTheTimeoutNamingTheLostRank) {
  const int victim = GetParam(), survivor = 1 - victim;
  testing::TempDir dir;
  auto overrides = tiny_overrides("ddp", dir.str(), "run");
  overrides.push_back("train.steps=1000000");  // runs until killed
  overrides.push_back("train.eval_every=0");
  auto args = as_flags(overrides);
  args.push_back("--dist-timeout=20");
  const int port = pick_free_port("127.0.0.1");
  Rank r0(0, 2, port, args, dir), r1(1, 2, port, args, dir);
  Rank* ranks[2] = {&r0, &r1};
  ASSERT_TRUE(training_started(dir / "run", 60s)) << r0.stderr_text() << r1.stderr_text();

  kill(ranks[victim]->pid, SIGKILL);
  const auto killed_at = Clock::now();
  const int code = ranks[survivor]->wait_exit(30s);
  const double took = std::chrono::duration<double>(Clock::now() - killed_at).count();
  ASSERT_NE(code, -1) << "rank " << survivor << " still running 30 s after rank " << victim << " was killed";
  EXPECT_NE(code, 0);
  EXPECT_LT(took, 20.0) << "detection took longer than the configured timeout";
  const std::string err = ranks[survivor]->stderr_text();
  EXPECT_NE(err.find("lost rank " + std::to_string(victim)), std::string::npos) << err;
  // The run folder stays readable: config and complete metrics lines.
  EXPECT_TRUE(fs::exists(dir / "run/config.toml"));
  std::ifstream in(dir / "run/metrics.jsonl");
  for (std::string line; std::getline(in, line);) EXPECT_NO_THROW(nlohmann::json::parse(line)) << line;
}

INSTANTIATE_TEST_SUITE_P(EitherRank, KilledRank, ::testing::Values(0, 1),
                         [](const auto& p) { return "victim_rank" + std::to_string(p.param); });

// Starts ranks 0 and 1 with their own arguments and world sizes, and waits
// (bounded) for both to exit; codes are -1 for a rank still running.
struct TwoRanks {
  int code0 = -1, code1 = -1;
  std::string err0, err1;
};
TwoRanks run_two_ranks(std::vector<std::string> args0, int64_t world0, std::vector<std::string> args1, int64_t world1,
                       const testing::TempDir& dir) {
  args0.push_back("--dist-timeout=30");
  args1.push_back("--dist-timeout=30");
  const int port = pick_free_port("127.0.0.1");
  Rank r0(0, world0, port, args0, dir), r1(1, world1, port, args1, dir);
  TwoRanks out;
  out.code1 = r1.wait_exit(40s);
  out.code0 = r0.wait_exit(40s);
  out.err0 = r0.stderr_text();
  out.err1 = r1.stderr_text();
  return out;
}

TEST(RealRun, MismatchedConfigsAreRefusedAtStartUpNamingTheKeyOnBothRanks) {
  testing::TempDir dir;
  auto a0 = as_flags(tiny_overrides("diloco", dir.str(), "run")), a1 = a0;
  a0.push_back("--model.n_embd=16");
  a1.push_back("--model.n_embd=32");
  const TwoRanks r = run_two_ranks(a0, 2, a1, 2, dir);
  EXPECT_EQ(r.code0, 1);
  EXPECT_EQ(r.code1, 1);
  EXPECT_NE(r.err1.find("model.n_embd = 32 on rank 1 but 16 on rank 0"), std::string::npos) << r.err1;
  EXPECT_NE(r.err0.find("refusing to start: model.n_embd = 32 on rank 1 but 16 on rank 0"), std::string::npos)
      << r.err0;
  EXPECT_FALSE(fs::exists(dir / "run")) << "a refused start must not create the run folder";
}

TEST(RealRun, MismatchedWorldSizesAreRefusedAtStartUp) {
  testing::TempDir dir;
  auto args = as_flags(tiny_overrides("ddp", dir.str(), "run"));
  args.erase(std::remove(args.begin(), args.end(), "--strategy.workers=2"), args.end());  // follows WORLD_SIZE
  const TwoRanks r = run_two_ranks(args, 2, args, 3, dir);
  EXPECT_EQ(r.code0, 1);
  EXPECT_EQ(r.code1, 1);
  EXPECT_NE(r.err1.find("dist.world_size = 3 on rank 1 but 2 on rank 0"), std::string::npos) << r.err1;
}

TEST(RealRun, ExistingRunFolderOnRankZeroStopsEveryRankAndIsLeftUntouched) {
  testing::TempDir dir;
  fs::create_directories(dir / "run");
  const std::string marker = dir.write("run/keep.txt", "precious");
  const auto args = as_flags(tiny_overrides("ddp", dir.str(), "run"));
  const TwoRanks r = run_two_ranks(args, 2, args, 2, dir);
  EXPECT_EQ(r.code0, 1);
  EXPECT_EQ(r.code1, 1);
  EXPECT_NE(r.err1.find("rank 0 could not start the run: run folder"), std::string::npos) << r.err1;
  std::ifstream in(marker);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "precious");
  EXPECT_FALSE(fs::exists(dir / "run/metrics.jsonl"));
}

// ---------------------------------------------------------------------------
// The divergence check (train/divergence_check.h)

// DiLoCo, H = 4 (syncs after steps 4, 8, 12); rank 1 adds 1e-3 to its
// theta_g's h1.c_fc.weight after step 6, so the two ranks' theta_g differ in
// that tensor alone at the sync of step 8.
std::vector<std::string> perturbed(const std::string& out_dir, const std::string& name, const std::string& check) {
  std::vector<std::string> o = tiny_overrides("diloco", out_dir, name);
  o.push_back("faults.perturb_global=1@6:h1.c_fc.weight");
  o.push_back("run.divergence_check=" + check);  // the last override wins
  return o;
}

TEST(DivergenceCheck, ARealRunWhoseRankHoldsAnotherGlobalModelStopsNamingTheStepAndTheTensor) {
  testing::TempDir dir;
  std::string err;
  // "auto": on in a real run.
  const LaunchResult r = launch_train(2, perturbed(dir.str(), "real", "auto"), err);
  EXPECT_NE(r.exit_code, 0) << err;
  EXPECT_NE(err.find("divergence check after the sync of step 8: rank 1's global model differs from rank 0's in "
                     "h1.c_fc.weight; the ranks no longer train one model"),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("more tensors"), std::string::npos) << err;
  // Off, the same run ends normally: it is the check that stops it.
  const LaunchResult off = launch_train(2, perturbed(dir.str(), "off", "off"), err);
  EXPECT_EQ(off.exit_code, 0) << err;
}

TEST(DivergenceCheck, OnInTheSimulatorItStopsThePerturbedRunAndItsAllGathersAreInTheLedger) {
  testing::TempDir dir;
  const Config cfg = load_config("", perturbed(dir.str(), "sim", "on"));
  try {
    simulate(cfg);
    ADD_FAILURE() << "the perturbed run was not stopped";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("after the sync of step 8: rank 1's global model differs from rank 0's in "
                                         "h1.c_fc.weight"),
              std::string::npos)
        << e.what();
  }
  // Unperturbed: three syncs, each one all-gather of 32 bytes per tensor.
  Config clean = load_config("", tiny_overrides("diloco", dir.str(), "clean"));
  const RunSummary s = simulate(clean);
  clean.run.divergence_check = "off";
  clean.run.name = "clean_off";
  const RunSummary off = simulate(clean);
  // (N - 1) = 1 digest of 32 bytes per tensor per sync, for some whole number of tensors.
  const double tensors = (s.bytes_sent_per_worker - off.bytes_sent_per_worker) / (3 * 32.0);
  EXPECT_EQ(tensors, std::floor(tensors));
  EXPECT_GE(tensors, 5);
  EXPECT_LE(tensors, 40);
}

}  // namespace
}  // namespace atl
