// DeMo (ALGORITHMS.md 6) on the least-squares harness: real threads over an
// InProcessGroup, float64 unless a test says otherwise.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "atoll/comm.h"
#include "atoll/strategy.h"
#include "strategy/demo.h"
#include "strategy_harness.h"

namespace atl {
namespace {

using namespace harness;

// 40 x 25 + 25 parameters: a 40 x 25 block has 1000 coefficients, so the
// default k = 32 really compresses.
constexpr int64_t kDemoIn = 40, kDemoOut = 25;

Config demo_config() {
  Config cfg = base_config("demo", "sgd");  // DeMo has its own update: optim.name is unused
  cfg.optim.weight_decay = 0;
  return cfg;
}

RunOptions demo_options(std::vector<Ledger>* ledgers = nullptr) {
  RunOptions o;
  o.in = kDemoIn;
  o.out = kDemoOut;
  o.ledgers = ledgers;
  return o;
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  for (const auto& t : ts) out.push_back(t.detach().clone());
  return out;
}

// Per entry: after == before + lr * s with s in {-1, 0, +1}, computed as the
// strategy computes it (W - lr * sign), so equality is exact.
bool moved_by_lr_or_zero(const at::Tensor& before, const at::Tensor& after, double lr) {
  const at::Tensor b = before.detach(), a = after.detach();
  return (a.eq(b) | a.eq(b - lr) | a.eq(b + lr)).all().item<bool>();
}

TEST(DeMoEquivalence, AllCoefficientsWithoutSignEqualDdpSgdAtLrSquared) {
  // k = all coefficients (harness blocks: 5 x 3 and 3, chunk 64): every worker
  // sends its whole momentum, which drops to ~0, so m = lr g each step, the mean
  // over workers of all coefficients is lr * mean_i g_i and the step is
  // W - lr * lr * mean_i g_i: DDP with plain SGD (no momentum, no weight decay:
  // the sgd inner optimizer uses neither) at lr^2.
  Config demo = demo_config();
  demo.demo.topk = 4096;
  demo.demo.chunk = 64;
  demo.demo.sign = false;
  demo.demo.weight_decay = 0;
  Config ddp = base_config("ddp", "sgd");
  ddp.optim.weight_decay = 0;
  const double lr = 0.05;
  auto a = run(demo, 3, 25, lr, own_data);
  auto b = run(ddp, 3, 25, lr * lr, own_data);
  // Not exact: values travel as float32. The rounding stays in m (error
  // feedback) and is sent a step later, so W lags by lr * (float32 rounding of
  // m ~ lr g), ~ lr^2 * |g| * 6e-8.
  for (int w = 0; w < 3; ++w) EXPECT_LT(max_abs_diff(a[w], b[w]), 1e-10) << "worker " << w;
  EXPECT_GT(max_abs_diff(b[0], Worker(at::kDouble).params), 1e-3);  // training moved the weights
}

TEST(DeMoReplicas, StayBitwiseIdenticalWithOwnDataInFloat32) {
  Config cfg = demo_config();
  cfg.optim.grad_clip = 1.0;  // each worker clips its own gradient: must not break the agreement
  RunOptions o = demo_options();
  o.dtype = at::kFloat;
  auto got = run_with(cfg, 3, 20, 0.01, own_data, o);
  EXPECT_TRUE(bitwise_equal(got[1], got[0]));
  EXPECT_TRUE(bitwise_equal(got[2], got[0]));
  EXPECT_FALSE(bitwise_equal(got[0], Worker(at::kFloat, kDemoIn, kDemoOut).params));
}

TEST(DeMoLedger, OneAllGatherPerStepOfTheHandCountedPayloadForInt16AndInt64Indices) {
  // chunk 8 on the 40 x 25 model:
  //   W (40, 25): n1 = 8, n2 = 5 -> 5 * 5 = 25 blocks of 40 entries, k = 32
  //   b (25):     n1 = 5          -> 5 blocks of 5 entries, k clamped to 5
  // 25 * 32 + 5 * 5 = 825 coefficients, each a float32 value and an index.
  const int64_t steps = 5;
  const std::pair<std::string, double> cases[] = {{"int16", 825 * (4 + 2)}, {"int64", 825 * (4 + 8)}};
  for (const auto& [dtype, s] : cases) {
    Config cfg = demo_config();
    cfg.demo.chunk = 8;
    cfg.demo.topk = 32;
    cfg.demo.index_dtype = dtype;
    std::vector<double> received_per_step;
    for (int64_t n : {2, 3, 4}) {
      std::vector<Ledger> ledgers;
      run_with(cfg, n, steps, 0.01, own_data, demo_options(&ledgers));
      for (int64_t r = 0; r < n; ++r) {
        const Ledger& l = ledgers[r];
        ASSERT_EQ(l.ops(), steps) << dtype << " N = " << n << " rank " << r;
        for (int64_t t = 0; t < steps; ++t) {
          const LedgerEntry& e = l.entries()[t];
          EXPECT_EQ(e.step, t);
          EXPECT_EQ(e.op, CommOp::AllGather);
          EXPECT_EQ(e.tag, "demo");
          EXPECT_EQ(e.payload_bytes, s) << dtype;
          EXPECT_EQ(e.sent_bytes, double(n - 1) * s) << dtype << " N = " << n;
          EXPECT_EQ(e.received_bytes, double(n - 1) * s) << dtype << " N = " << n;
        }
        EXPECT_EQ(l.total_sent(), double(steps * (n - 1)) * s);
        EXPECT_EQ(l.total_received(), double(steps * (n - 1)) * s);
      }
      received_per_step.push_back(ledgers[0].total_received() / double(steps));
    }
    // Linear in N: (N - 1) s for N = 2, 3, 4.
    EXPECT_EQ(received_per_step[0], s);
    EXPECT_EQ(received_per_step[1], 2 * s);
    EXPECT_EQ(received_per_step[2], 3 * s);
  }
}

TEST(DeMoLedger, StatsReportTheHandCountedPayloadBytes) {
  Config cfg = demo_config();
  cfg.demo.chunk = 8;
  InProcessGroup group(1);
  Worker worker(at::kDouble, kDemoIn, kDemoOut);
  DemoStrategy demo(cfg, worker.params, group.rank(0));
  const auto stats = demo.stats();
  EXPECT_EQ(stats.at("demo_payload_bytes"), 825 * 6);  // as in the ledger test, int16 indices
  EXPECT_EQ(stats.at("demo_coefficients"), 825);
  EXPECT_DOUBLE_EQ(stats.at("demo_bytes_per_param"), 825.0 * 6 / double(kDemoIn * kDemoOut + kDemoOut));
}

TEST(DeMoErrorFeedback, WhatLeavesTheMomentumIsExactlyWhatWasSent) {
  Config cfg = demo_config();
  cfg.demo.beta = 0.9;
  cfg.demo.sign = false;
  InProcessGroup group(1);
  Worker worker(at::kDouble, kDemoIn, kDemoOut);
  DemoStrategy demo(cfg, worker.params, group.rank(0));
  const double lr = 0.1;
  worker.backward(11, 0);
  demo.step(0, lr);  // m is non-zero from here on
  worker.backward(11, 1);
  std::vector<at::Tensor> g;
  for (const auto& p : worker.params) g.push_back(p.grad().clone());
  const auto m_before = clones(demo.momentum()), w_before = clones(worker.params);
  demo.step(1, lr);
  for (size_t j = 0; j < g.size(); ++j) {
    // One worker, no sign: the step is W - lr * IDCT(what this worker sent).
    const at::Tensor sent = (w_before[j] - worker.params[j].detach()) / lr;
    const at::Tensor m_after = demo.momentum()[j];
    const at::Tensor want = cfg.demo.beta * m_before[j] + lr * g[j];
    EXPECT_LT((m_after + sent - want).abs().max().item<double>(), 1e-12) << "tensor " << j;
    EXPECT_GT(sent.abs().max().item<double>(), 1e-3) << "tensor " << j;
  }
  // k = 32 of the matrix's 1000 coefficients: most of its momentum stays behind.
  EXPECT_GT(demo.momentum()[0].abs().max().item<double>(), 1e-3);
}

TEST(DeMoSign, OneStepMovesEveryEntryByExactlyLrOrZero) {
  Config cfg = demo_config();
  cfg.demo.weight_decay = 0;
  const double lr = 0.01;
  const auto before = Worker(at::kDouble, kDemoIn, kDemoOut).params;
  auto after = run_with(cfg, 2, 1, lr, own_data, demo_options());
  for (int w = 0; w < 2; ++w) {
    for (size_t j = 0; j < before.size(); ++j)
      EXPECT_TRUE(moved_by_lr_or_zero(before[j], after[w][j], lr)) << "worker " << w << " tensor " << j;
  }
  EXPECT_GT(max_abs_diff(after[0], before), 0.5 * lr);  // something moved
}

TEST(DeMoSign, DecoupledWeightDecayShrinksThenMovesEveryEntryByExactlyLrOrZero) {
  Config cfg = demo_config();
  cfg.demo.weight_decay = 0.1;
  const double lr = 0.01;
  const auto before = Worker(at::kDouble, kDemoIn, kDemoOut).params;
  auto after = run_with(cfg, 2, 1, lr, own_data, demo_options());
  for (int w = 0; w < 2; ++w) {
    for (size_t j = 0; j < before.size(); ++j) {
      const at::Tensor shrunk = before[j].detach().mul(1.0 - lr * cfg.demo.weight_decay);
      EXPECT_TRUE(moved_by_lr_or_zero(shrunk, after[w][j], lr)) << "worker " << w << " tensor " << j;
      EXPECT_FALSE(moved_by_lr_or_zero(before[j], after[w][j], lr)) << "weight decay was not applied";
    }
  }
}

// The harness draws y independently of x ~ N(0, I), so the expected loss is
// E mean_j (x W_j + b_j - y_j)^2 = 1 + (|W|^2 + |b|^2) / out, minimised at W = 0, b = 0.
double expected_loss(const std::vector<at::Tensor>& p) {
  return 1.0 +
         (p[0].detach().pow(2).sum().item<double>() + p[1].detach().pow(2).sum().item<double>()) / double(p[0].size(1));
}

TEST(DeMoTraining, WorkersWithDifferentDataLowerTheExpectedLossOver50Steps) {
  const double start = expected_loss(Worker(at::kDouble, kDemoIn, kDemoOut).params);
  auto got = run_with(demo_config(), 3, 50, 0.01, own_data, demo_options());
  const double end = expected_loss(got[0]);
  EXPECT_LT(end, 0.9 * start);  // clearly lower (46.3 -> 34.5 when written), not by rounding
}

}  // namespace
}  // namespace atl
