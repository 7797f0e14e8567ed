// PALSGD: pseudo-synchronisation steps, its DDP warm-up, and how the driver
// skips their compute.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "atoll/comm.h"
#include "atoll/strategy.h"
#include "strategy/palsgd.h"
#include "strategy_harness.h"

namespace atl {
namespace {

using namespace harness;

Config palsgd_config(double p, int64_t h, int64_t warmup) {
  Config cfg = base_config("palsgd", "adamw");
  cfg.palsgd.p = p;
  cfg.palsgd.inner_steps = h;
  cfg.palsgd.ddp_warmup_steps = warmup;
  cfg.palsgd.eta = 1.0;
  return cfg;
}

// Which steps rank `rank` of `n` spends on pseudo-synchronisation (coins come
// from (run seed, worker, step) or (run seed, step), so a lone strategy object
// answers the same).
std::vector<bool> pseudo_steps(const Config& cfg, int64_t rank, int64_t steps, int64_t n = 0) {
  InProcessGroup group(n > 0 ? n : rank + 1);
  Worker w(at::kDouble);
  PalsgdStrategy s(cfg, w.params, group.rank(rank));
  std::vector<bool> out;
  for (int64_t t = 0; t < steps; ++t) out.push_back(!s.needs_gradient(t));
  return out;
}

TEST(Palsgd, WithPZeroItEqualsDiLoCoWithTheSameDdpWarmup) {
  Config palsgd = palsgd_config(0.0, 4, 3);
  Config diloco = base_config("diloco", "adamw");
  diloco.diloco.inner_steps = 4;
  diloco.diloco.ddp_warmup_steps = 3;
  diloco.diloco.outer_lr = palsgd.palsgd.outer_lr;
  diloco.diloco.outer_momentum = palsgd.palsgd.outer_momentum;
  auto a = run(palsgd, 3, 17, 0.01, own_data);
  auto b = run(diloco, 3, 17, 0.01, own_data);
  for (int w = 0; w < 3; ++w) EXPECT_TRUE(bitwise_equal(a[w], b[w])) << "worker " << w;
}

TEST(Palsgd, PseudoSyncStepsMoveThetaTowardTheStoredGlobalModelByTheFormula) {
  const double lr = 0.01, p = 0.3;
  Config cfg = palsgd_config(p, 8, 2);
  History h;
  RunOptions o;
  o.history = &h;
  const int64_t steps = 40;
  run_with(cfg, 2, steps, lr, own_data, o);
  for (int64_t rank = 0; rank < 2; ++rank) {
    const auto pseudo = pseudo_steps(cfg, rank, steps);
    int checked = 0;
    for (int64_t t = 3; t < steps; ++t) {
      if (!pseudo[t] || (t + 1) % 8 == 0) continue;  // sync steps also apply the outer step
      // theta_bar: the worker's parameters right after the last outer sync
      // (or the end of the DDP warm-up at step 1).
      const int64_t last_sync = t >= 8 ? (t + 1) / 8 * 8 - 1 : 1;
      for (size_t k = 0; k < h[rank][t].size(); ++k) {
        const at::Tensor& before = h[rank][t - 1][k];
        const at::Tensor want = before - (lr / p) * 1.0 * (before - h[rank][last_sync][k]);
        EXPECT_LT((h[rank][t][k] - want).abs().max().item<double>(), 1e-15) << "rank " << rank << " step " << t;
      }
      ++checked;
    }
    EXPECT_GT(checked, 0) << "no pseudo-sync step to check on rank " << rank;
  }
}

TEST(Palsgd, WorkersFlipTheirOwnCoinsAtRateP) {
  Config cfg = palsgd_config(0.2, 32, 32);
  const auto a = pseudo_steps(cfg, 0, 2032), b = pseudo_steps(cfg, 1, 2032);
  int64_t na = 0, nb = 0, both = 0;
  for (int64_t t = 0; t < 32; ++t) EXPECT_FALSE(a[t]) << "no pseudo-sync during the DDP warm-up";
  for (int64_t t = 32; t < 2032; ++t) {
    na += a[t];
    nb += b[t];
    both += a[t] && b[t];
  }
  // Binomial(2000, 0.2): mean 400, sd 18; independent coins agree on ~80.
  EXPECT_NEAR(double(na), 400, 72);
  EXPECT_NEAR(double(nb), 400, 72);
  EXPECT_NEAR(double(both), 80, 40);
}

TEST(Palsgd, SharedCoinsMakeEveryWorkerSkipTheSameStepsPrivateOnesDoNot) {
  Config cfg = palsgd_config(0.2, 32, 32);
  ASSERT_EQ(cfg.palsgd.coins, "private");  // the default: today's behaviour
  for (const char* coins : {"private", "shared"}) {
    cfg.palsgd.coins = coins;
    const bool shared = std::string(coins) == "shared";
    const auto first = pseudo_steps(cfg, 0, 532, 4);
    int64_t skipped = 0;
    for (int64_t t = 32; t < 532; ++t) skipped += first[t];
    EXPECT_NEAR(double(skipped), 100, 30) << coins << ": still at rate p";  // Binomial(500, 0.2), sd 9
    for (int64_t rank = 1; rank < 4; ++rank)
      EXPECT_EQ(pseudo_steps(cfg, rank, 532, 4) == first, shared) << coins << ", worker " << rank;
  }
}

TEST(Palsgd, CommunicatesLikeDiLoCoAfterTheDdpWarmup) {
  Config cfg = palsgd_config(0.2, 4, 3);
  Ledger l;
  run(cfg, 2, 15, 0.01, own_data, at::kDouble, &l);
  // Steps 0-2: a gradient all-reduce each; then syncs after steps 3, 7, 11.
  ASSERT_EQ(l.ops(), 6);
  EXPECT_EQ(l.sent_by_tag().count("grad"), 1u);
  EXPECT_DOUBLE_EQ(l.sent_by_tag().at("pseudo-grad"), 3 * 18 * 8.0);
}

}  // namespace
}  // namespace atl
