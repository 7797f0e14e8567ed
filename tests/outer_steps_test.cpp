// K outer steps per sync (diloco.outer_steps_per_sync, palsgd.outer_steps_per_sync):
// the PALSGD authors' code takes one outer step on the pseudo-gradient and
// K - 1 more on a zero one (ALGORITHMS.md 5(d)). Their closed form, their
// optional all-reduces in the ledger, their FLOPs, and their config rules.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "atoll/comm.h"
#include "atoll/setup.h"
#include "atoll/strategy.h"
#include "strategy_harness.h"

namespace atl {
namespace {

using namespace harness;

Config outer_config(int64_t k, bool nesterov) {
  Config cfg = base_config("diloco", "sgd");
  cfg.diloco.inner_steps = 1;
  cfg.diloco.outer_lr = 0.7;
  cfg.diloco.outer_momentum = 0.9;
  cfg.diloco.nesterov = nesterov;
  cfg.diloco.outer_steps_per_sync = k;
  return cfg;
}

// One worker, inner SGD, H = 1 (Delta_r = lr g_r), three syncs, checked
// against the closed form of one sync's K steps, with b the buffer before it:
//   b1 = mu b + Delta, then b_k = mu^(k-1) b1 for the K - 1 zero steps;
//   Nesterov:    theta -= lr_out (Delta + b1 sum_{k=1..K} mu^k)
//   heavy ball:  theta -= lr_out b1 sum_{k=0..K-1} mu^k
// and the buffer leaves the sync as mu^(K-1) b1.
TEST(DiLoCoOuterSteps, KZeroGradientStepsEqualTheClosedFormOfKMomentumSteps) {
  const double lr = 0.1, lr_out = 0.7, mu = 0.9;
  for (bool nesterov : {true, false})
    for (int64_t k : {1, 2, 16}) {
      auto got = run(outer_config(k, nesterov), 1, 3, lr, shared_data);
      Worker w(at::kDouble);
      std::vector<at::Tensor> theta, buf;
      for (auto& p : w.params) {
        theta.push_back(p.detach().clone());
        buf.push_back(at::zeros_like(p));
      }
      double nesterov_sum = 0, heavy_sum = 0;  // sum_{j=1..K} mu^j, sum_{j=0..K-1} mu^j
      for (int64_t j = 0; j < k; ++j) {
        nesterov_sum += std::pow(mu, double(j + 1));
        heavy_sum += std::pow(mu, double(j));
      }
      for (int64_t t = 0; t < 3; ++t) {
        for (size_t i = 0; i < theta.size(); ++i) w.params[i] = theta[i].clone().requires_grad_();
        w.backward(shared_data(0), t);
        for (size_t i = 0; i < theta.size(); ++i) {
          const at::Tensor delta = lr * w.params[i].grad();
          const at::Tensor b1 = mu * buf[i] + delta;
          theta[i] = nesterov ? theta[i] - lr_out * (delta + nesterov_sum * b1) : theta[i] - lr_out * heavy_sum * b1;
          buf[i] = std::pow(mu, double(k - 1)) * b1;
        }
      }
      EXPECT_LT(max_abs_diff(got[0], theta), 1e-12) << "K = " << k << (nesterov ? " nesterov" : " heavy ball");
    }
}

TEST(DiLoCoOuterSteps, ChargedExtraSyncsPutKMinusOneZeroAllReducesPerSyncInTheLedger) {
  Config cfg = outer_config(4, true);
  cfg.diloco.inner_steps = 4;
  cfg.diloco.charge_extra_syncs = true;
  Ledger l;
  run(cfg, 2, 12, 0.01, own_data, at::kDouble, &l);  // syncs after steps 3, 7, 11
  int64_t real = 0, extra = 0;
  for (const auto& e : l.entries()) {
    real += e.tag == "pseudo-grad";
    extra += e.tag == "pseudo-grad-extra";
    if (e.tag == "pseudo-grad-extra") {
      EXPECT_EQ(e.payload_bytes, 18 * 8.0);  // the full payload, as sent
    }
  }
  EXPECT_EQ(real, 3);
  EXPECT_EQ(extra, 3 * 3);
  // Not charged unless asked: the math alone.
  cfg.diloco.charge_extra_syncs = false;
  Ledger quiet;
  run(cfg, 2, 12, 0.01, own_data, at::kDouble, &quiet);
  EXPECT_EQ(quiet.ops(), 3);
  EXPECT_EQ(quiet.sent_by_tag().count("pseudo-grad-extra"), 0u);
}

TEST(DiLoCoOuterSteps, EveryOuterStepOfASyncIsChargedItsFlops) {
  for (int64_t k : {1, 16}) {
    Config cfg = outer_config(k, true);
    InProcessGroup group(1);
    Worker w(at::kDouble);
    auto s = make_strategy(cfg, w.params, group.rank(0));
    w.backward(shared_data(0), 0);
    s->step(0, 0.1);                                                        // H = 1: a sync
    EXPECT_EQ(s->take_extra_flops(), double(k) * 8.0 * 18) << "K = " << k;  // 8 operations a parameter a step
  }
}

TEST(DiLoCoOuterSteps, PalsgdWithPZeroAndK16EqualsDiLoCoWithK16) {
  Config palsgd = base_config("palsgd", "adamw");
  palsgd.palsgd.p = 0;
  palsgd.palsgd.inner_steps = 4;
  palsgd.palsgd.ddp_warmup_steps = 3;
  palsgd.palsgd.outer_steps_per_sync = 16;
  Config diloco = base_config("diloco", "adamw");
  diloco.diloco.inner_steps = 4;
  diloco.diloco.ddp_warmup_steps = 3;
  diloco.diloco.outer_lr = palsgd.palsgd.outer_lr;
  diloco.diloco.outer_momentum = palsgd.palsgd.outer_momentum;
  diloco.diloco.outer_steps_per_sync = 16;
  auto a = run(palsgd, 2, 13, 0.01, own_data);
  auto b = run(diloco, 2, 13, 0.01, own_data);
  EXPECT_TRUE(bitwise_equal(a[0], b[0]));
  diloco.diloco.outer_steps_per_sync = 1;  // and K is not ignored
  EXPECT_FALSE(bitwise_equal(a[0], run(diloco, 2, 13, 0.01, own_data)[0]));
}

bool mentions(const std::vector<std::string>& errors, const std::string& text) {
  for (const auto& e : errors)
    if (e.find(text) != std::string::npos) return true;
  return false;
}

TEST(DiLoCoOuterSteps, ConfigRejectsKOutsideOneToAThousandAndKAboveOneWithAdam) {
  Config c;
  c.strategy.name = "diloco";
  EXPECT_TRUE(validate(c).empty());
  c.diloco.outer_steps_per_sync = 0;
  c.palsgd.outer_steps_per_sync = 1001;
  EXPECT_TRUE(mentions(validate(c), "diloco.outer_steps_per_sync (K) must be in 1..1000"));
  EXPECT_TRUE(mentions(validate(c), "palsgd.outer_steps_per_sync (K) must be in 1..1000"));
  c.diloco.outer_steps_per_sync = 16;
  c.palsgd.outer_steps_per_sync = 16;
  EXPECT_TRUE(validate(c).empty());
  c.diloco.outer_optimizer = "adam";
  EXPECT_TRUE(mentions(validate(c), "needs diloco.outer_optimizer = sgd"));
  Config p;
  p.strategy.name = "palsgd";
  p.palsgd.coins = "public";
  EXPECT_TRUE(mentions(validate(p), "palsgd.coins = 'public': allowed values are private | shared"));
}

}  // namespace
}  // namespace atl
