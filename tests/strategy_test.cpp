// Strategy equivalences (float64) and bitwise identities, run on real
// threads over an InProcessGroup exactly as simulate() drives them.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "atoll/comm.h"
#include "atoll/strategy.h"
#include "strategy/baselines.h"
#include "strategy_harness.h"

namespace atl {
namespace {

using namespace harness;

// DiLoCo with inner optimizer `inner`, H, lr_out and mu.
Config diloco_config(const std::string& inner, int64_t h, double outer_lr, double momentum) {
  Config cfg = base_config("diloco", inner);
  cfg.diloco.inner_steps = h;
  cfg.diloco.outer_lr = outer_lr;
  cfg.diloco.outer_momentum = momentum;
  return cfg;
}

TEST(Strategy, DiLoCoWithH1OuterLr1NoMomentumEqualsDdpWithSameInnerSgd) {
  auto a = run(diloco_config("sgd", 1, 1.0, 0.0), 4, 25, 0.05, own_data);
  auto b = run(base_config("ddp", "sgd"), 4, 25, 0.05, own_data);
  EXPECT_LT(max_abs_diff(a[0], b[0]), 1e-12);
  EXPECT_GT(max_abs_diff(a[0], Worker(at::kDouble).params), 1e-3);  // training moved the weights
}

TEST(Strategy, DiLoCoWithOuterLr1NoMomentumEqualsLocalSgdForAnyH) {
  for (int64_t h : {1, 3, 7}) {
    Config diloco = diloco_config("adamw", h, 1.0, 0.0);
    Config local = base_config("localsgd", "adamw");
    local.diloco.inner_steps = h;
    auto a = run(diloco, 3, 21, 0.01, own_data);
    auto b = run(local, 3, 21, 0.01, own_data);
    for (int w = 0; w < 3; ++w) EXPECT_LT(max_abs_diff(a[w], b[w]), 1e-12) << "H = " << h << ", worker " << w;
  }
}

TEST(Strategy, TwoIdenticalWorkersEqualTheSingleWorkerRunBitwise) {
  Config single = base_config("single", "adamw");
  single.optim.grad_clip = 1.0;
  auto one = run(single, 1, 20, 0.01, shared_data, at::kFloat);
  for (const char* name : {"ddp", "localsgd", "diloco"}) {
    Config cfg = base_config(name, "adamw");
    cfg.optim.grad_clip = 1.0;
    cfg.diloco.inner_steps = 4;
    // DiLoCo's outer step is not the identity, so compare it with its own 1-worker run.
    auto reference = std::string(name) == "diloco" ? run(cfg, 1, 20, 0.01, shared_data, at::kFloat) : one;
    auto two = run(cfg, 2, 20, 0.01, shared_data, at::kFloat);
    EXPECT_TRUE(bitwise_equal(two[0], reference[0])) << name;
    EXPECT_TRUE(bitwise_equal(two[1], reference[0])) << name;
  }
}

TEST(Strategy, DiLoCoKeepsWorkersApartBetweenSyncsAndIdenticalAtSyncs) {
  Config cfg = base_config("diloco", "adamw");
  cfg.diloco.inner_steps = 5;
  auto at_sync = run(cfg, 3, 10, 0.01, own_data);
  EXPECT_TRUE(bitwise_equal(at_sync[0], at_sync[1]));
  EXPECT_TRUE(bitwise_equal(at_sync[0], at_sync[2]));
  auto between = run(cfg, 3, 12, 0.01, own_data);
  EXPECT_FALSE(bitwise_equal(between[0], between[1]));
}

TEST(Strategy, DiLoCoOuterNesterovStepMatchesTheFormulaByHand) {
  // One worker, inner SGD, H = 1: Delta_r = lr * g_r. Check two rounds of
  // buf <- mu buf + Delta; theta <- theta - lr_out (Delta + mu buf).
  auto got = run(diloco_config("sgd", 1, 0.7, 0.9), 1, 2, 0.1, shared_data);

  Worker w(at::kDouble);
  std::vector<at::Tensor> theta, buf;
  for (auto& p : w.params) {
    theta.push_back(p.detach().clone());
    buf.push_back(at::zeros_like(p));
  }
  for (int64_t t = 0; t < 2; ++t) {
    for (size_t i = 0; i < theta.size(); ++i) w.params[i] = theta[i].clone().requires_grad_();
    w.backward(shared_data(0), t);
    for (size_t i = 0; i < theta.size(); ++i) {
      at::Tensor delta = 0.1 * w.params[i].grad();
      buf[i] = 0.9 * buf[i] + delta;
      theta[i] = theta[i] - 0.7 * (delta + 0.9 * buf[i]);
    }
  }
  EXPECT_LT(max_abs_diff(got[0], theta), 1e-12);
}

TEST(Strategy, DiLoCoOuterAdamStepMatchesTheFormulaByHand) {
  // R4's ablation: Adam on the pseudo-gradient, beta1 = outer_momentum, with
  // bias correction. One worker, inner SGD, H = 1, three rounds.
  Config cfg = diloco_config("sgd", 1, 0.05, 0.9);
  cfg.diloco.outer_optimizer = "adam";
  cfg.diloco.outer_beta2 = 0.99;
  cfg.diloco.outer_eps = 1e-6;
  auto got = run(cfg, 1, 3, 0.1, shared_data);

  Worker w(at::kDouble);
  std::vector<at::Tensor> theta, m, v;
  for (auto& p : w.params) {
    theta.push_back(p.detach().clone());
    m.push_back(at::zeros_like(p));
    v.push_back(at::zeros_like(p));
  }
  for (int64_t t = 0; t < 3; ++t) {
    for (size_t i = 0; i < theta.size(); ++i) w.params[i] = theta[i].clone().requires_grad_();
    w.backward(shared_data(0), t);
    for (size_t i = 0; i < theta.size(); ++i) {
      at::Tensor delta = 0.1 * w.params[i].grad();
      m[i] = 0.9 * m[i] + 0.1 * delta;
      v[i] = 0.99 * v[i] + 0.01 * delta * delta;
      const double c1 = 1 - std::pow(0.9, t + 1), c2 = 1 - std::pow(0.99, t + 1);
      theta[i] = theta[i] - 0.05 * (m[i] / c1) / ((v[i] / c2).sqrt() + 1e-6);
    }
  }
  EXPECT_LT(max_abs_diff(got[0], theta), 1e-12);
  // Not the Nesterov step: the same run with outer SGD lands elsewhere.
  auto sgd = run(diloco_config("sgd", 1, 0.05, 0.9), 1, 3, 0.1, shared_data);
  EXPECT_GT(max_abs_diff(got[0], sgd[0]), 1e-3);
}

TEST(Strategy, DdpSendsOneGradientAllReducePerStepAndDiLoCoOnePerRound) {
  // Ledger counts: DDP one "grad" op per step; DiLoCo one "pseudo-grad" per H steps.
  for (const char* name : {"ddp", "diloco"}) {
    Config cfg = base_config(name, "adamw");
    cfg.diloco.inner_steps = 4;
    Ledger l;
    run(cfg, 2, 12, 0.01, own_data, at::kDouble, &l);
    const double payload = 18 * 8;  // 5*3 + 3 float64 values
    const bool ddp = std::string(name) == "ddp";
    EXPECT_EQ(l.ops(), ddp ? 12 : 3) << name;
    EXPECT_DOUBLE_EQ(l.total_sent(), (ddp ? 12 : 3) * payload) << name;  // ring, N=2: 2(N-1)/N*S = S
    EXPECT_EQ(l.sent_by_tag().count(ddp ? "grad" : "pseudo-grad"), 1u) << name;
  }
}

// ddp.overlap only changes how the all-reduce is timed and ledgered: DDP, and
// the DDP warm-ups of DiLoCo and PALSGD, give bitwise the same parameters with
// it on or off. Tiny caps (1e-5 MiB = 10 bytes) put each of the harness's two
// tensors in its own bucket: b (3 values, produced first by the backward
// pass), then W (15); the ledger then holds two "grad" entries a step that add
// up to the single all-reduce's bytes.
TEST(Strategy, DdpOverlapChangesNeitherTheParametersNorTheBytes) {
  for (const char* name : {"ddp", "diloco", "palsgd"}) {
    Config off = base_config(name, "adamw");
    off.diloco.inner_steps = 2;
    off.diloco.ddp_warmup_steps = 4;
    off.palsgd.ddp_warmup_steps = 4;
    off.palsgd.inner_steps = 2;
    off.ddp.overlap = false;
    Config on = off;
    on.ddp.overlap = true;
    on.ddp.bucket_mb = 1e-5;
    on.ddp.first_bucket_mb = 1e-5;
    Ledger l_on, l_off;
    auto a = run(on, 2, 6, 0.01, own_data, at::kDouble, &l_on);
    auto b = run(off, 2, 6, 0.01, own_data, at::kDouble, &l_off);
    for (int r = 0; r < 2; ++r) EXPECT_TRUE(bitwise_equal(a[r], b[r])) << name << " rank " << r;
    EXPECT_EQ(l_on.sent_by_tag().at("grad"), l_off.sent_by_tag().at("grad")) << name;
    EXPECT_DOUBLE_EQ(l_on.total_sent(), l_off.total_sent()) << name;
    std::vector<double> grad_on;
    int64_t grad_off = 0;
    for (const auto& e : l_on.entries())
      if (e.tag == "grad") grad_on.push_back(e.payload_bytes);
    for (const auto& e : l_off.entries()) grad_off += e.tag == "grad";
    ASSERT_EQ(int64_t(grad_on.size()), 2 * grad_off) << name;
    EXPECT_DOUBLE_EQ(grad_on[0], 3 * 8) << name;   // b first
    EXPECT_DOUBLE_EQ(grad_on[1], 15 * 8) << name;  // then W
  }
}

// PyTorch's rule: reverse parameter order, a bucket closes once it holds at
// least its cap, the first cap applies to the first bucket only, tensors are
// never split, empty tensors send nothing.
TEST(Strategy, DdpBucketsFillInReverseParameterOrderUpToTheirCaps) {
  // Parameters of 100, 0, 50, 30, 30 float32 (400, 0, 200, 120, 120 bytes), caps 200 then 300 bytes:
  // reversed 30, 30, 50, 0, 100: 30+30 = 240 >= 200 closes; 50 + 100 = 600 >= 300 closes.
  EXPECT_EQ(ddp_buckets({100, 0, 50, 30, 30}, 4, 200, 300), (std::vector<int64_t>{60, 150}));
  // Caps larger than the model: one bucket, the un-overlapped all-reduce.
  EXPECT_EQ(ddp_buckets({100, 50}, 4, 1 << 20, 25 << 20), (std::vector<int64_t>{150}));
  // The last bucket may stay under its cap.
  EXPECT_EQ(ddp_buckets({10, 100, 10}, 4, 40, 800), (std::vector<int64_t>{10, 110}));
}

}  // namespace
}  // namespace atl
