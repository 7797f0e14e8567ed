// The DDP warm-up of the DiLoCo family (strategy/ddp_warmup.h), for every
// method whose strategy-table line names a warm-up key: its steps are DDP's,
// the evaluation reads the model being trained, and the method then starts
// from the warmed model as if it had started cold from it; with
// diloco.warmup_sync = none the steps are local and each worker keeps its own.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "atoll/setup.h"
#include "atoll/strategy.h"
#include "atoll/train.h"
#include "every_strategy.h"
#include "strategy/table.h"
#include "strategy_harness.h"
#include "tiny_data.h"

namespace atl {
namespace {

using namespace harness;

// The methods with a DDP warm-up: those whose table line names its key.
std::vector<std::string> warmup_methods(const char* key = nullptr) {
  std::vector<std::string> out;
  for (const Method& m : strategy_table())
    if (m.warmup_key != nullptr && (key == nullptr || std::string(m.warmup_key) == key)) out.push_back(m.name);
  return out;
}

// `cfg` with its method's warm-up key (the table's) set to `steps`.
Config with_warmup(Config cfg, int64_t steps) {
  std::vector<std::string> errors;
  apply_overrides(cfg, {std::string(find_method(cfg.strategy.name)->warmup_key) + "=" + std::to_string(steps)}, errors);
  EXPECT_TRUE(errors.empty());
  return cfg;
}

// What one run of the harness's least-squares workers leaves behind.
struct Trace {
  History params;                                    // [rank][i]: parameters after step from + i
  History global;                                    // [rank][i]: theta_g after step from + i
  std::vector<std::map<std::string, double>> stats;  // [rank]: the strategy's counters at the end
  std::vector<Ledger> ledgers;                       // [rank]
};

// Steps from..to-1 of `cfg`'s method on n workers, worker r reading
// own_data(r) at step t, starting from `start[r]` (null: the harness's model).
Trace drive(const Config& cfg, int64_t n, int64_t from, int64_t to, double lr,
            const std::vector<std::vector<at::Tensor>>* start = nullptr) {
  InProcessGroup group(n);
  std::vector<Worker> workers(n, Worker(at::kDouble));
  for (int64_t r = 0; r < n; ++r)
    for (size_t k = 0; k < workers[r].params.size(); ++k)
      workers[r].params[k] = (start ? (*start)[r][k] : workers[r].params[k]).detach().clone().requires_grad_();
  Trace out;
  out.params.assign(n, {});
  out.global.assign(n, {});
  out.stats.assign(n, {});
  on_threads(group, [&](int64_t r, Communicator& comm) {
    auto strategy = make_strategy(cfg, workers[r].params, comm);
    for (int64_t t = from; t < to; ++t) {
      comm.set_step(t);
      if (strategy->needs_gradient(t)) workers[r].backward(own_data(r), t);
      strategy->step(t, lr);
      std::vector<at::Tensor> p, g;
      for (auto& x : workers[r].params) p.push_back(x.detach().clone());
      if (const auto* global = strategy->global_params())
        for (auto& x : *global) g.push_back(x.detach().clone());
      out.params[r].push_back(p);
      out.global[r].push_back(g);
    }
    out.stats[r] = strategy->stats();
  });
  for (int64_t r = 0; r < n; ++r) out.ledgers.push_back(group.rank(r).ledger());
  return out;
}

// The settings that make each method do something within a few steps on the
// harness's two-tensor model; inner SGD keeps no state, so a cold start from
// the warmed model is the same start as the warm run's.
Config family_config(const std::string& method, int64_t h) {
  Config cfg = base_config(method, "sgd");
  cfg.diloco.inner_steps = h;
  cfg.palsgd.inner_steps = h;
  cfg.sparta.p = 0.5;
  cfg.streaming.fragment_blocks = 1;  // the two tensors are two blocks: F = 2 fragments
  cfg.streaming.codec = "fp32";
  return cfg;
}

// Every ledger entry's tag of rank r made before step `before`.
std::vector<std::string> tags_before(const Ledger& l, int64_t before) {
  std::vector<std::string> tags;
  for (const LedgerEntry& e : l.entries())
    if (e.step < before) tags.push_back(e.tag);
  return tags;
}

// Sent bytes per tag at or after step `from`.
std::map<std::string, double> sent_from(const Ledger& l, int64_t from) {
  std::map<std::string, double> out;
  for (const LedgerEntry& e : l.entries())
    if (e.step >= from) out[e.tag] += e.sent_bytes;
  return out;
}

class Warmup : public ::testing::TestWithParam<std::string> {};

TEST_P(Warmup, EvaluationDuringTheWarmupSeesTheModelBeingTrained) {
  // Two workers on their own shards, a 10-step warm-up evaluated every 5
  // steps: every train and eval figure up to step 10 is DDP's, exactly.
  const int64_t warmup = 10;
  Config cfg = with_warmup(tiny_config(GetParam(), 2), warmup);
  cfg.train.steps = 15;
  cfg.train.eval_every = 5;
  cfg.train.log_every = 1;
  Config ddp = tiny_config("ddp", 2);
  ddp.train = cfg.train;
  std::map<std::pair<std::string, int64_t>, double> want;
  for (const auto& e : events_of(simulate(ddp))) {
    if (e["event"] == "train") want[{"loss", e["step"].get<int64_t>()}] = e["loss"].get<double>();
    if (e["event"] == "eval") want[{"val_loss", e["step"].get<int64_t>()}] = e["val_loss"].get<double>();
  }
  int evals = 0, trains = 0;
  for (const auto& e : events_of(simulate(cfg))) {
    if (e["event"] != "train" && e["event"] != "eval") continue;
    const int64_t step = e["step"].get<int64_t>();
    if (step > warmup) continue;
    const std::string key = e["event"] == "train" ? "loss" : "val_loss";
    ASSERT_TRUE(want.count({key, step})) << key << " at step " << step;
    EXPECT_EQ(e[key].get<double>(), want.at({key, step})) << key << " at step " << step;
    ++(e["event"] == "train" ? trains : evals);
  }
  EXPECT_EQ(evals, 3);  // steps 0, 5 and 10
  EXPECT_EQ(trains, warmup);
}

TEST_P(Warmup, WarmupIsDdpThenTheMethodStartsFromItsModel) {
  // W = 4, H = 4, 12 steps, two workers on their own data. The warm run's
  // steps 0..3 are DDP's bitwise; theta_g holds the warmed model at the
  // switch; steps 4..11 equal, bitwise (parameters, theta_g, counters and
  // every byte but the warm-up's gradients), the method run with no warm-up
  // from DDP's model at step 4 over the same steps t = 4..11 (its rounds
  // counted on the global step, outer momentum zero).
  const int64_t n = 2, warmup = 4, steps = 12;
  const double lr = 0.05;
  const Config cold = family_config(GetParam(), 4);
  const Config warm = with_warmup(cold, warmup);
  const Trace w = drive(warm, n, 0, steps, lr);
  const Trace d = drive(family_config("ddp", 4), n, 0, warmup, lr);
  std::vector<std::vector<at::Tensor>> warmed;
  for (int64_t r = 0; r < n; ++r) warmed.push_back(d.params[r][warmup - 1]);
  const Trace c = drive(with_warmup(cold, 0), n, warmup, steps, lr, &warmed);
  for (int64_t r = 0; r < n; ++r) {
    SCOPED_TRACE("worker " + std::to_string(r));
    for (int64_t t = 0; t < warmup; ++t) EXPECT_TRUE(bitwise_equal(w.params[r][t], d.params[r][t])) << "step " << t;
    EXPECT_TRUE(bitwise_equal(w.global[r][warmup - 1], w.params[r][warmup - 1])) << "theta_g at the switch";
    for (int64_t t = warmup; t < steps; ++t) {
      EXPECT_TRUE(bitwise_equal(w.params[r][t], c.params[r][t - warmup])) << "step " << t;
      EXPECT_TRUE(bitwise_equal(w.global[r][t], c.global[r][t - warmup])) << "theta_g after step " << t;
    }
    EXPECT_EQ(w.stats[r], c.stats[r]);
    for (const std::string& tag : tags_before(w.ledgers[r], warmup)) EXPECT_EQ(tag, "grad") << "during the warm-up";
    EXPECT_EQ(tags_before(w.ledgers[r], warmup).size(), size_t(warmup));  // one gradient all-reduce a step
    EXPECT_EQ(sent_from(w.ledgers[r], warmup), sent_from(c.ledgers[r], warmup));
    EXPECT_FALSE(sent_from(c.ledgers[r], warmup).empty()) << "the method communicated after the warm-up";
  }
}

TEST_P(Warmup, AStopInsideTheWarmupResumesLikeTheRunThatNeverStopped) {
  // The warm-up's state (theta_g following the workers, the gradient codec)
  // goes through the checkpoint: stopped at step 4 of an 8-step warm-up and
  // resumed, every loss and the final parameters are the uninterrupted run's.
  testing::TempDir tmp;
  Config cfg = with_warmup(tiny_config(GetParam(), 2), 8);
  cfg.run.out_dir = tmp.str();
  cfg.train.steps = 16;
  cfg.train.eval_every = 2;
  cfg.train.log_every = 1;
  cfg.diloco.inner_steps = 4;
  cfg.palsgd.inner_steps = 4;
  cfg.run.name = "whole";
  const RunSummary whole = train(cfg);
  cfg.run.name = "resumed";
  cfg.run.stop_at = 4;
  ASSERT_EQ(train(cfg).stopped_at, 4);
  cfg.run.stop_at = 0;
  cfg.run.resume = "true";
  const RunSummary second = train(cfg);
  ASSERT_EQ(second.stopped_at, -1);
  EXPECT_EQ(whole.final_val_loss, second.final_val_loss);
  EXPECT_EQ(whole.bytes_sent_per_worker, second.bytes_sent_per_worker);
  auto figures = [](const std::string& dir) {
    std::vector<std::string> out;
    std::ifstream in(dir + "/metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      const auto e = nlohmann::json::parse(line);
      for (const char* key : {"loss", "val_loss", "params_hash_per_worker"})
        if (e.contains(key))
          out.push_back(e["event"].dump() + " " + e.value("step", nlohmann::json()).dump() + " " + key + " " +
                        e[key].dump());
    }
    return out;
  };
  const auto a = figures(tmp.path("whole")), b = figures(tmp.path("resumed"));
  EXPECT_EQ(a, b);
  EXPECT_GT(a.size(), 16u);
}

INSTANTIATE_TEST_SUITE_P(DiLoCoFamily, Warmup, ::testing::ValuesIn(warmup_methods()), testing::method_test_name);

class LocalWarmup : public ::testing::TestWithParam<std::string> {};

TEST_P(LocalWarmup, WarmupSyncNoneTakesLocalStepsAndEachWorkerStartsFromItsOwnModel) {
  // diloco.warmup_sync = none: the warm-up sends nothing and each worker's
  // steps are a lone worker's ("single" on its own data); at the switch each
  // worker's theta_g is its own model, so the two differ.
  const int64_t n = 2, warmup = 4;
  Config cfg = with_warmup(family_config(GetParam(), 4), warmup);
  cfg.diloco.warmup_sync = "none";
  const Trace w = drive(cfg, n, 0, 8, 0.05);
  const Trace alone = drive(family_config("single", 4), n, 0, warmup, 0.05);
  for (int64_t r = 0; r < n; ++r) {
    SCOPED_TRACE("worker " + std::to_string(r));
    EXPECT_TRUE(tags_before(w.ledgers[r], warmup).empty()) << "the warm-up communicated";
    for (int64_t t = 0; t < warmup; ++t) EXPECT_TRUE(bitwise_equal(w.params[r][t], alone.params[r][t])) << "step " << t;
    EXPECT_TRUE(bitwise_equal(w.global[r][warmup - 1], alone.params[r][warmup - 1])) << "theta_g at the switch";
  }
  EXPECT_GT(max_abs_diff(w.global[0][warmup - 1], w.global[1][warmup - 1]), 0);
}

INSTANTIATE_TEST_SUITE_P(DiLoCoFamily, LocalWarmup, ::testing::ValuesIn(warmup_methods("diloco.ddp_warmup_steps")),
                         testing::method_test_name);

TEST(DdpWarmupConfig, WarmupSyncIsGradientsOrNone) {
  for (const std::string value : {"gradients", "none"}) {
    Config c;
    c.strategy.name = "diloco";
    c.diloco.warmup_sync = value;
    EXPECT_TRUE(validate(c).empty()) << value;
  }
  Config c;
  c.strategy.name = "diloco";
  c.diloco.warmup_sync = "params";
  const auto errors = validate(c);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "diloco.warmup_sync = 'params': allowed values are gradients | none");
}

}  // namespace
}  // namespace atl
