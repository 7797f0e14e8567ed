// The simulate driver end to end on generated text: determinism, run
// folders, metrics, byte counts and error handling.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "atoll/data.h"
#include "atoll/train.h"
#include "test_util.h"
#include "tiny_data.h"

namespace atl {
namespace {

namespace fs = std::filesystem;

// The values that must not depend on timing: losses and byte counts.
std::vector<double> trajectory(const RunSummary& s) {
  std::vector<double> out;
  for (const auto& line : s.events) {
    auto e = nlohmann::json::parse(line);
    for (const char* key : {"loss", "val_loss", "bytes_sent_per_worker"})
      if (e.contains(key)) out.push_back(e[key].get<double>());
  }
  return out;
}

TEST(Train, SameSeedGivesBitwiseIdenticalSimulationsWhateverTheThreadTiming) {
  for (const char* strategy : {"ddp", "diloco", "localsgd"}) {
    Config cfg = tiny_config(strategy, 3);
    auto a = trajectory(simulate(cfg));
    auto b = trajectory(simulate(cfg));
    ASSERT_FALSE(a.empty());
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << strategy << " value " << i;
  }
}

TEST(Train, EvalEveryZeroEvaluatesAtTheEndOnly) {
  testing::TempDir tmp;
  Config cfg = tiny_config("diloco", 2);
  cfg.run.out_dir = tmp.str();
  cfg.train.eval_every = 0;
  std::vector<int64_t> eval_steps;
  for (const auto& e : events_of(train(cfg)))
    if (e.at("event") == "eval") eval_steps.push_back(e.at("step").get<int64_t>());
  EXPECT_EQ(eval_steps, std::vector<int64_t>{cfg.train.steps}) << "--help says eval_every = 0 is the end only";
  cfg.train.eval_every = 10;
  cfg.run.name = "every10";
  eval_steps.clear();
  for (const auto& e : events_of(train(cfg)))
    if (e.at("event") == "eval") eval_steps.push_back(e.at("step").get<int64_t>());
  EXPECT_EQ(eval_steps, (std::vector<int64_t>{0, 10, 20}));
}

TEST(Train, DifferentSeedsGiveDifferentRuns) {
  Config a = tiny_config("single", 1), b = a;
  b.run.seed = a.run.seed + 1;
  EXPECT_NE(trajectory(simulate(a)), trajectory(simulate(b)));
}

TEST(Train, SingleWorkerRunLowersTheValidationLoss) {
  Config cfg = tiny_config("single", 1);
  cfg.train.steps = 60;
  cfg.optim.lr = 1e-2;
  RunSummary s = simulate(cfg);
  double first_val = -1;
  for (const auto& line : s.events) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] == "eval" && first_val < 0) first_val = e["val_loss"].get<double>();
  }
  EXPECT_LT(s.final_val_loss, first_val - 0.5) << "first evaluation " << first_val;
}

TEST(Train, LedgerBytesMatchTheRingFormulaForDdpAndDiLoCo) {
  for (const char* strategy : {"ddp", "diloco"}) {
    Config cfg = tiny_config(strategy, 4);
    RunSummary s = simulate(cfg);
    const double payload = 4.0 * double(s.params);    // fp32 values
    const double per_op = 2.0 * 3.0 / 4.0 * payload;  // 2(N-1)/N * S
    const double ops = std::string(strategy) == "ddp" ? 20 : 20 / 5;
    EXPECT_DOUBLE_EQ(s.bytes_sent_per_worker, ops * per_op) << strategy;
  }
}

TEST(Train, RunFolderHoldsConfigMetricsAndSummaryAndIsNeverOverwrittenUnasked) {
  Config cfg = tiny_config("single", 1);
  testing::TempDir runs;
  cfg.run.out_dir = runs.str();
  cfg.run.name = "r";
  cfg.train.steps = 10;
  RunSummary s = train(cfg);
  const fs::path dir = s.run_dir;
  for (const char* f : {"config.toml", "metrics.jsonl", "metrics.csv", "summary.json"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  // metrics.jsonl: one JSON object per line, starting with "start" and ending with "end".
  std::ifstream in(dir / "metrics.jsonl");
  std::string line, first, last;
  int lines = 0, starts = 0;
  nlohmann::json start;
  while (std::getline(in, line)) {
    auto e = nlohmann::json::parse(line);
    if (lines++ == 0) first = e["event"], start = e;
    starts += e["event"] == "start";
    last = e["event"];
  }
  EXPECT_EQ(first, "start");
  EXPECT_EQ(starts, 1);
  EXPECT_EQ(last, "end");
  // The start event names the machine (CPU and BLAS kernels).
  ASSERT_TRUE(start.contains("machine")) << start.dump();
  for (const char* key : {"cpu", "vendor", "cpu_family", "cpu_model", "isa", "blas_kernels", "openblas_coretype"})
    EXPECT_TRUE(start["machine"].contains(key)) << key;
  const auto before = fs::last_write_time(dir / "metrics.jsonl");
  EXPECT_THROW(
      {
        try {
          train(cfg);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("already exists"), std::string::npos);
          throw;
        }
      },
      std::runtime_error);
  EXPECT_EQ(fs::last_write_time(dir / "metrics.jsonl"), before);
  cfg.run.overwrite = true;
  EXPECT_NO_THROW(train(cfg));
}

TEST(Train, AFailingWorkerEndsTheSimulationWithItsErrorInsteadOfHanging) {
  Config cfg = tiny_config("ddp", 4);
  cfg.optim.lr = 1e30;  // the loss becomes non-finite within a few steps
  cfg.optim.warmup_steps = 0;
  cfg.optim.grad_clip = 0;
  auto result = std::async(std::launch::async, [cfg] {
    try {
      simulate(cfg);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  ASSERT_EQ(result.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  EXPECT_NE(result.get().find("loss is"), std::string::npos);
}

TEST(Train, MissingDataFolderIsAClearError) {
  Config cfg = tiny_config("single", 1);
  cfg.data.dir = "/nonexistent/atoll/data";
  try {
    simulate(cfg);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("scripts/setup"), std::string::npos);
  }
}

// With modelled compute the clock is exact: each step costs c = 6-rule FLOPs /
// (device FLOP/s x MFU) times the worker's speed factor, and each blocking
// ring all-reduce costs 2(N-1)/N * S / beta after the slowest worker arrives.
TEST(Train, FlopsModeSimulatedTimeIsStragglerComputePlusBlockingCommunication) {
  for (const char* strategy : {"ddp", "diloco"}) {
    Config cfg = tiny_config(strategy, 2);
    cfg.network.compute_time = "flops";
    cfg.network.device_flops = 1e9;
    cfg.network.mfu = 0.5;
    cfg.network.bandwidth = "8Mbit/s";  // 1e6 bytes/s
    cfg.network.speed_factors = "1,2";  // worker 1 is a straggler at half speed
    RunSummary s = simulate(cfg);
    nlohmann::json start = nlohmann::json::parse(s.events.front());
    const double c =
        start["flops_per_token"].get<double>() * start["tokens_per_step_per_worker"].get<double>() / (1e9 * 0.5);
    const double comm = 4.0 * double(s.params) / 1e6;  // S / beta for N = 2
    const bool ddp = std::string(strategy) == "ddp";
    const double syncs = ddp ? 20 : 20 / 5;
    // DiLoCo's outer step after each sync: 8 operations per parameter at the
    // same rate, times each worker's speed factor.
    const double outer = ddp ? 0 : 8.0 * double(s.params) / (1e9 * 0.5);
    const double expected = 20 * 2 * c + syncs * (comm + 2 * outer);
    EXPECT_NEAR(s.sim_seconds, expected, 1e-9 * expected) << strategy;
    // Worker 0 computes half the time of worker 1 and waits for it at every sync.
    const double mean_compute = (20 * c + syncs * outer + 20 * 2 * c + syncs * 2 * outer) / 2;
    EXPECT_NEAR(s.compute_utilisation, mean_compute / expected, 1e-9) << strategy;
  }
}

// The default clock is modelled (network.compute_time = flops): a rerun on a
// busy machine is charged exactly the same simulated times, and every time
// field of the run is bitwise equal.
TEST(Train, TheDefaultClockChargesTheSameSimulatedTimesOnABusyMachine) {
  Config cfg = tiny_config("diloco", 2);
  ASSERT_EQ(Config().network.compute_time, "flops");
  cfg.network.compute_time = Config().network.compute_time;
  cfg.network.device_flops = Config().network.device_flops;
  const RunSummary quiet = simulate(cfg);
  // Two threads spinning on the two cores while the same run trains again.
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < 2; ++i)
    hogs.emplace_back([&] {
      volatile double x = 1;
      while (!stop.load(std::memory_order_relaxed)) x = x * 1.0000001 + 1e-9;
    });
  const RunSummary busy = simulate(cfg);
  stop = true;
  for (auto& t : hogs) t.join();
  EXPECT_EQ(quiet.sim_seconds, busy.sim_seconds);
  EXPECT_EQ(quiet.compute_utilisation, busy.compute_utilisation);
  std::vector<double> a, b;
  for (const auto* s : {&quiet, &busy})
    for (const auto& line : s->events) {
      const auto e = nlohmann::json::parse(line);
      for (const char* key : {"sim_time_s", "compute_s", "blocked_s"})
        if (e.contains(key)) (s == &quiet ? a : b).push_back(e[key].get<double>());
    }
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  const auto start = nlohmann::json::parse(quiet.events.front());
  EXPECT_EQ(start["clock"].get<std::string>().rfind("modelled:", 0), 0u) << start["clock"];
}

// One worker and N workers are charged on the same footing: the same
// modelled compute per step, whatever else shares the machine's cores.
TEST(Train, OneWorkerAndFourWorkersAreChargedTheSameComputePerStep) {
  Config one = tiny_config("single", 1), four = tiny_config("ddp", 4);
  for (Config* c : {&one, &four}) c->network.compute_time = "flops";
  auto compute_per_step = [](const RunSummary& s) {
    double compute = 0;
    for (const auto& line : s.events) {
      const auto e = nlohmann::json::parse(line);
      if (e["event"] == "train") compute = e["compute_s"].get<double>();
    }
    return compute / double(s.steps);
  };
  const double c1 = compute_per_step(simulate(one)), c4 = compute_per_step(simulate(four));
  EXPECT_GT(c1, 0);
  EXPECT_DOUBLE_EQ(c1, c4);
}

// A method's own work costs modelled time too: DeMo's transforms make its
// modelled compute exceed DDP's (same model, same steps) by more than 1%.
TEST(Train, TheModelledClockChargesDemosTransformsOnTopOfTheModelsCompute) {
  Config ddp = tiny_config("ddp", 2), demo = tiny_config("demo", 2);
  double compute[2] = {0, 0};
  int i = 0;
  for (Config* c : {&ddp, &demo}) {
    c->network.compute_time = "flops";
    for (const auto& line : simulate(*c).events) {
      const auto e = nlohmann::json::parse(line);
      if (e["event"] == "train") compute[i] = e["compute_s"].get<double>();
    }
    ++i;
  }
  EXPECT_GT(compute[1], compute[0] * 1.01) << "DeMo's DCTs are charged";
}

// ddp.overlap through the driver (flops mode, 2 workers, 8 Mbit/s, no
// latency): the worker loop calls set_step before charging a step's compute,
// so the communicator sees T. With the tiny model in one bucket (the default
// 1 MiB first bucket) the time is exactly the un-overlapped run's; with
// 10-byte caps (a bucket per tensor) some of every step's all-reduce hides
// behind the backward pass, at most its 2T/3. The losses never change.
TEST(Train, DdpOverlapHidesOnlyBackwardTimeAndKeepsTheTrajectory) {
  auto run = [](bool overlap, double cap_mb) {
    Config cfg = tiny_config("ddp", 2);
    cfg.network.compute_time = "flops";
    cfg.network.device_flops = 1e9;
    cfg.network.mfu = 0.5;
    cfg.network.bandwidth = "8Mbit/s";
    cfg.ddp.overlap = overlap;
    cfg.ddp.bucket_mb = cfg.ddp.first_bucket_mb = cap_mb;
    return simulate(cfg);
  };
  auto losses = [](const RunSummary& s) {
    std::vector<std::string> out;
    for (const auto& line : s.events) {
      auto e = nlohmann::json::parse(line);
      if (e["event"] == "train") out.push_back(e["loss"].dump());
      if (e["event"] == "eval") out.push_back(e["val_loss"].dump());
    }
    return out;
  };
  const RunSummary off = run(false, 25), one_bucket = run(true, 25), buckets = run(true, 1e-5);
  EXPECT_EQ(one_bucket.sim_seconds, off.sim_seconds);
  EXPECT_EQ(losses(buckets), losses(off));
  nlohmann::json start = nlohmann::json::parse(off.events.front());
  const double c = start["flops_per_token"].get<double>() * start["tokens_per_step_per_worker"].get<double>() / 5e8;
  EXPECT_LT(buckets.sim_seconds, off.sim_seconds);
  EXPECT_GE(buckets.sim_seconds, off.sim_seconds - 20 * (2.0 / 3.0) * c - 1e-12);
}

TEST(Train, MultiWorkerRunsLogParameterCorrelationAndSpartaItsExchangeCounts) {
  Config cfg = tiny_config("sparta", 3);
  cfg.strategy.correlation_every = 10;
  cfg.sparta.p = 0.05;
  int correlations = 0;
  for (const auto& e : events_of(simulate(cfg))) {
    if (e["event"] != "train") continue;
    EXPECT_EQ(e.contains("correlation"), e["step"].get<int64_t>() % 10 == 0) << e.dump();
    if (e.contains("correlation")) {
      ++correlations;
      EXPECT_GT(e["correlation"].get<double>(), 0.5);
      EXPECT_LT(e["correlation"].get<double>(), 1.0);  // sparse averaging never makes them equal
      EXPECT_LE(e["correlation_min"].get<double>(), e["correlation"].get<double>());
    }
    EXPECT_EQ(e["sparta_exchanges"].get<double>(), e["step"].get<double>());
    EXPECT_NEAR(e["sparta_fraction"].get<double>(), 0.05, 0.02);
  }
  EXPECT_EQ(correlations, 2);
  // DDP keeps the workers identical: correlation 1; one worker logs none.
  for (const auto& e : events_of(simulate(tiny_config("ddp", 2))))
    if (e.contains("correlation")) {
      EXPECT_NEAR(e["correlation"].get<double>(), 1.0, 1e-12);
    }
  for (const auto& e : events_of(simulate(tiny_config("single", 1)))) EXPECT_FALSE(e.contains("correlation"));
}

TEST(Train, PalsgdPseudoSyncStepsChargeNoComputeOnTheSimulatedClock) {
  Config cfg = tiny_config("palsgd", 1);
  cfg.palsgd.p = 0.3;
  cfg.palsgd.inner_steps = 4;
  cfg.palsgd.ddp_warmup_steps = 4;
  cfg.network.compute_time = "flops";
  cfg.network.device_flops = 1e9;
  RunSummary s = simulate(cfg);
  nlohmann::json start = nlohmann::json::parse(s.events.front()), last_train;
  for (const auto& line : s.events) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] == "train") last_train = e;
  }
  const double c = start["flops_per_token"].get<double>() * start["tokens_per_step_per_worker"].get<double>() /
                   (1e9 * cfg.network.mfu);
  const double pseudo = last_train["palsgd_pseudo_sync_steps"].get<double>();
  EXPECT_GT(pseudo, 0);
  EXPECT_EQ(pseudo + last_train["palsgd_local_steps"].get<double>(), 16);  // after the 4 DDP steps
  // Plus the outer Nesterov steps' modelled work: 8 operations per parameter
  // at each of the 4 syncs (steps 8, 12, 16, 20).
  const double outer = 4 * 8.0 * double(s.params) / (1e9 * cfg.network.mfu);
  EXPECT_NEAR(last_train["compute_s"].get<double>(), (20 - pseudo) * c + outer, 1e-9);
}

// A 2-worker, 2-fragment Streaming run in flops mode (H = 4, fp32 payloads,
// 20 steps) on a link over which the whole model takes `model_transfer_steps`
// steps: its blocked time (the last train event's), one step's compute, its
// simulated time and its parameter count.
struct StreamingClock {
  double blocked = 0, step_s = 0, sim_s = 0, params = 0;
};
StreamingClock streaming_on_a_slow_link(int64_t tau, bool eager, double model_transfer_steps) {
  Config cfg = tiny_config("streaming", 2);
  cfg.model.n_layer = 2;
  cfg.streaming.fragment_blocks = 1;  // F = 2
  cfg.streaming.overlap = tau;
  cfg.streaming.eager = eager;
  cfg.streaming.codec = "fp32";
  cfg.diloco.inner_steps = 4;
  cfg.network.compute_time = "flops";
  cfg.network.device_flops = 1e9;
  RunSummary s = simulate(cfg);
  nlohmann::json start = nlohmann::json::parse(s.events.front());
  StreamingClock out;
  out.step_s = start["flops_per_token"].get<double>() * start["tokens_per_step_per_worker"].get<double>() /
               (1e9 * cfg.network.mfu);
  cfg.network.bandwidth = std::to_string(4.0 * double(s.params) / (model_transfer_steps * out.step_s));
  s = simulate(cfg);
  for (const auto& line : s.events) {
    auto e = nlohmann::json::parse(line);
    if (e["event"] == "train") out.blocked = e["blocked_s"].get<double>();
  }
  out.sim_s = s.sim_seconds;
  out.params = double(s.params);
  return out;
}

TEST(Train, StreamingOverlapHidesAFragmentsAllReduceBehindTheNextSteps) {
  // Flops mode, identical workers: with tau = 0 every fragment sync blocks
  // for its transfer time; with tau = 1 the next step's compute (longer than
  // any fragment's transfer here) hides it completely.
  double blocked[2] = {0, 0};
  for (int64_t tau : {0, 1}) {
    // Whole model through one link in half a step: each fragment takes less.
    const StreamingClock r = streaming_on_a_slow_link(tau, false, 0.5);
    blocked[tau] = r.blocked;
    // Plus the outer steps' modelled work: 10 operations per parameter of a
    // synced fragment; 20 steps at H = 4 sync every fragment 5 times (5 P).
    const double outer = 10.0 * 5 * r.params / (1e9 * Config{}.network.mfu);
    EXPECT_NEAR(r.sim_s, 20 * r.step_s + outer + blocked[tau], 1e-9) << "tau " << tau;
  }
  EXPECT_GT(blocked[0], 0);
  EXPECT_NEAR(blocked[1], 0, 1e-12);
}

TEST(Train, StreamingEagerWaitsForEachFragmentsAllReduceAWholeRoundLaterAndNeverBlocks) {
  // Flops mode, identical workers, a link so slow that the whole model takes
  // 3 steps to cross: some fragment's transfer outlasts the one step tau = 1
  // hides, none the H = 4 steps eager updates hide (ALGORITHMS.md 7.3:
  // overlap budget H steps), the first round included.
  double blocked[2] = {0, 0}, step_s = 0;
  for (int eager : {0, 1}) {
    const StreamingClock r = streaming_on_a_slow_link(1 - eager, eager == 1, 3);
    blocked[eager] = r.blocked;
    step_s = r.step_s;
    // The outer steps' modelled work: 10 operations per parameter of a
    // synced fragment, 13 with the eager estimate; every fragment syncs 5 times.
    const double outer = (eager ? 13.0 : 10.0) * 5 * r.params / (1e9 * Config{}.network.mfu);
    EXPECT_NEAR(r.sim_s, 20 * step_s + outer + blocked[eager], 1e-9) << "eager " << eager;
  }
  EXPECT_GT(blocked[0], 0.5 * step_s);
  EXPECT_NEAR(blocked[1], 0, 1e-12);
}

TEST(Train, StreamingEagerTrainsWithPerWorkerGlobalModelsThatTheDivergenceCheckLeavesAlone) {
  Config cfg = tiny_config("streaming", 2);
  cfg.model.n_layer = 2;
  cfg.streaming.fragment_blocks = 1;  // F = 2
  cfg.streaming.overlap = 0;
  cfg.streaming.eager = true;
  cfg.diloco.inner_steps = 4;
  cfg.train.steps = 60;
  cfg.optim.lr = 1e-2;
  cfg.run.divergence_check = "on";  // would stop the run at its first sync: the workers' theta_g differ
  const RunSummary s = simulate(cfg);
  double first_val = -1;
  nlohmann::json end;
  for (const auto& e : events_of(s)) {
    if (e["event"] == "eval" && first_val < 0) first_val = e["val_loss"].get<double>();
    if (e["event"] == "end") end = e;
  }
  EXPECT_LT(s.final_val_loss, first_val - 0.5) << "first evaluation " << first_val;
  EXPECT_FALSE(end.at("bytes_sent_by_tag_total").contains("divergence-check")) << end;
  EXPECT_TRUE(end.at("bytes_sent_by_tag_total").contains("fragment/1")) << end;
}

TEST(Train, LearningRateWarmsUpLinearlyThenDecaysToTheFloor) {
  OptimConfig o;
  o.lr = 1.0;
  o.min_lr = 0.1;
  o.warmup_steps = 10;
  EXPECT_DOUBLE_EQ(learning_rate(o, 0, 110), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(o, 9, 110), 1.0);
  EXPECT_NEAR(learning_rate(o, 60, 110), 0.55, 1e-12);  // halfway through the cosine
  EXPECT_NEAR(learning_rate(o, 110, 110), 0.1, 1e-12);
}

}  // namespace
}  // namespace atl
