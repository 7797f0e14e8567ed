// SPARTA, SPARTA + DiLoCo, NoLoCo and the ring/gossip topologies, on the
// least-squares harness (float64, real threads over an InProcessGroup).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <set>

#include "atoll/comm.h"
#include "atoll/strategy.h"
#include "strategy/sparta.h"
#include "strategy/topology.h"
#include "strategy_harness.h"
#include "train/correlation.h"

namespace atl {
namespace {

using namespace harness;

// 40 x 25 + 25 = 1025 parameters: enough for p = 0.01..0.1 to select entries.
constexpr int64_t kIn = 40, kOut = 25, kParams = kIn * kOut + kOut;

Config sparta_config(double p, const std::string& selector = "random") {
  Config cfg = base_config("sparta", "adamw");
  cfg.sparta.p = p;
  cfg.sparta.selector = selector;
  return cfg;
}

RunOptions sparta_options(History* history = nullptr, std::vector<Ledger>* ledgers = nullptr) {
  RunOptions o;
  o.in = kIn;
  o.out = kOut;
  o.history = history;
  o.ledgers = ledgers;
  return o;
}

Selection selection_at(const Config& cfg, int64_t step, int64_t exchange) {
  auto sel = make_index_selector(cfg.sparta.selector, {kIn * kOut, kOut}, cfg.sparta.p,
                                 sparta_selector_seed(static_cast<uint64_t>(cfg.run.seed)));
  return sel->select(step, exchange, cfg.sparta.p);
}

// Per flat index (tensor 0 then tensor 1): selected or not.
std::vector<bool> mask_of(const Selection& s) {
  std::vector<bool> m(kParams, false);
  const int64_t offset[2] = {0, kIn * kOut};
  for (int j = 0; j < 2; ++j)
    for (int64_t i = s.begin[j]; i < s.begin[j + 1]; ++i) m[offset[j] + s.index[i]] = true;
  return m;
}

std::vector<double> flat(const std::vector<at::Tensor>& params) {
  std::vector<double> out;
  for (const auto& p : params) {
    at::Tensor c = p.detach().reshape({-1}).contiguous();
    out.insert(out.end(), c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  }
  return out;
}

TEST(Sparta, PZeroSendsNoBytesAndEveryWorkerTrainsAsIfAlone) {
  std::vector<Ledger> ledgers;
  auto got = run_with(sparta_config(0.0), 3, 12, 0.01, own_data, sparta_options(nullptr, &ledgers));
  for (int64_t w = 0; w < 3; ++w) {
    EXPECT_EQ(ledgers[w].ops(), 0) << w;
    EXPECT_EQ(ledgers[w].total_sent(), 0) << w;
    auto alone = run_with(
        base_config("single", "adamw"), 1, 12, 0.01, [w](int64_t) { return own_data(w); }, sparta_options());
    EXPECT_TRUE(bitwise_equal(got[w], alone[0])) << "worker " << w;
  }
}

TEST(Sparta, POneWithTheGlobalTopologyEqualsParameterAveragingEveryStep) {
  Config local = base_config("localsgd", "adamw");
  local.diloco.inner_steps = 1;
  auto a = run_with(sparta_config(1.0), 3, 10, 0.01, own_data, sparta_options());
  auto b = run_with(local, 3, 10, 0.01, own_data, sparta_options());
  for (int w = 0; w < 3; ++w) EXPECT_TRUE(bitwise_equal(a[w], b[w])) << "worker " << w;
}

TEST(Sparta, AfterAnExchangeExactlyTheMaskedEntriesAgreeAcrossWorkers) {
  for (const char* selector : {"random", "partitioned", "sequential", "layerwise"}) {
    Config cfg = sparta_config(0.05, selector);
    History h;
    run_with(cfg, 3, 6, 0.01, own_data, sparta_options(&h));
    for (int64_t t = 0; t < 6; ++t) {
      const std::vector<bool> mask = mask_of(selection_at(cfg, t, t));
      const auto a = flat(h[0][t]), b = flat(h[1][t]), c = flat(h[2][t]);
      int64_t selected = 0;
      for (int64_t i = 0; i < kParams; ++i) {
        const bool agree = a[i] == b[i] && b[i] == c[i];
        EXPECT_EQ(agree, bool(mask[i])) << selector << " step " << t << " entry " << i;
        selected += mask[i];
      }
      EXPECT_GT(selected, 0) << selector << " step " << t;
    }
  }
}

TEST(Sparta, MasksAreIdenticalOnEveryRankAndDifferBetweenSteps) {
  for (const char* selector : {"random", "partitioned", "sequential", "layerwise"}) {
    Config cfg = sparta_config(0.05, selector);
    // Two selectors built independently, as two ranks would.
    for (int64_t t = 0; t < 5; ++t) {
      const Selection a = selection_at(cfg, t, t), b = selection_at(cfg, t, t);
      EXPECT_EQ(a.index, b.index) << selector;
      EXPECT_EQ(a.begin, b.begin) << selector;
      EXPECT_NE(mask_of(a), mask_of(selection_at(cfg, t + 1, t + 1))) << selector << " step " << t;
    }
  }
  Config other = sparta_config(0.05);
  other.run.seed = 7;
  EXPECT_NE(mask_of(selection_at(sparta_config(0.05), 3, 3)), mask_of(selection_at(other, 3, 3)));
}

TEST(Sparta, RandomSelectorDrawsAboutPTimesTheParameters) {
  auto sel = make_index_selector("random", {1000000}, 0.005, 99);
  double total = 0;
  for (int64_t t = 0; t < 20; ++t) total += double(sel->select(t, t, 0.005).size());
  // Binomial(2e7, 0.005): mean 1e5, sd 315.
  EXPECT_NEAR(total, 1e5, 2000);
}

TEST(Sparta, CyclicSelectorsCoverEveryElementExactlyOncePerCycle) {
  const std::vector<int64_t> sizes = {1000, 37, 256};
  for (const char* selector : {"partitioned", "sequential", "layerwise"}) {
    auto sel = make_index_selector(selector, sizes, 0.01, 5);
    // Cycle length: 100 parts; layerwise: ceil(n / budget) exchanges per tensor (budget 13).
    const int64_t cycle = std::string(selector) == "layerwise" ? 77 + 3 + 20 : 100;
    for (int64_t c = 0; c < 2; ++c) {
      std::vector<std::vector<int>> seen(sizes.size());
      for (size_t j = 0; j < sizes.size(); ++j) seen[j].assign(sizes[j], 0);
      for (int64_t e = c * cycle; e < (c + 1) * cycle; ++e) {
        const Selection s = sel->select(e, e, 0.01);
        for (size_t j = 0; j < sizes.size(); ++j)
          for (int64_t i = s.begin[j]; i < s.begin[j + 1]; ++i) seen[j][s.index[i]] += 1;
      }
      for (size_t j = 0; j < sizes.size(); ++j)
        for (int64_t i = 0; i < sizes[j]; ++i)
          ASSERT_EQ(seen[j][i], 1) << selector << " cycle " << c << " tensor " << j << " entry " << i;
    }
    // Partitioned re-shuffles every cycle; sequential keeps one permutation.
    const bool same = sel->select(0, 0, 0.01).index == sel->select(100, 100, 0.01).index;
    if (std::string(selector) == "partitioned") {
      EXPECT_FALSE(same);
    }
    if (std::string(selector) == "sequential") {
      EXPECT_TRUE(same);
    }
  }
}

TEST(Sparta, AllReduceLedgerBytesAreTwoNMinusOneOverNTimesPPB) {
  // The partitioned selector sends exactly P entries per 1/p exchanges.
  for (int64_t n : {2, 3, 4}) {
    std::vector<Ledger> ledgers;
    run_with(sparta_config(0.1, "partitioned"), n, 10, 0.01, own_data, sparta_options(nullptr, &ledgers));
    const double want = 2.0 * double(n - 1) / double(n) * double(kParams) * 8;  // float64
    for (const auto& l : ledgers) {
      EXPECT_NEAR(l.total_sent(), want, 1e-6) << "N = " << n;
      EXPECT_EQ(l.ops(), 10) << "one collective per exchange, not one per tensor";
      EXPECT_EQ(l.sent_by_tag().count("sparse"), 1u);
    }
  }
}

TEST(Sparta, GossipLedgerBytesPerWorkerDoNotGrowWithN) {
  std::vector<double> per_worker;
  for (int64_t n : {2, 4, 6}) {
    Config cfg = sparta_config(0.1, "partitioned");
    cfg.strategy.topology = "gossip";
    std::vector<Ledger> ledgers;
    run_with(cfg, n, 10, 0.01, own_data, sparta_options(nullptr, &ledgers));
    for (const auto& l : ledgers) EXPECT_DOUBLE_EQ(l.total_sent(), ledgers[0].total_sent()) << "N = " << n;
    per_worker.push_back(ledgers[0].total_sent());
  }
  EXPECT_DOUBLE_EQ(per_worker[0], double(kParams) * 8);  // each entry once to one peer
  EXPECT_DOUBLE_EQ(per_worker[1], per_worker[0]);
  EXPECT_DOUBLE_EQ(per_worker[2], per_worker[0]);
}

TEST(Sparta, DelayedAveragesLandExactlyDStepsLater) {
  // Sequential parts are disjoint and 1/p = 10 > d, so an entry is touched by
  // one exchange at a time and its average is easy to follow.
  const int64_t d = 3;
  Config cfg = sparta_config(0.1, "sequential");
  cfg.sparta.delay = d;
  History h;
  run_with(cfg, 2, 9, 0.01, own_data, sparta_options(&h));
  for (int64_t s = 0; s + d < 9; ++s) {
    const std::vector<bool> mask = mask_of(selection_at(cfg, s, s));
    const auto sent0 = flat(h[0][s]), sent1 = flat(h[1][s]);
    for (int64_t later = s; later <= s + d; ++later) {
      const auto a = flat(h[0][later]), b = flat(h[1][later]);
      for (int64_t i = 0; i < kParams; ++i) {
        if (!mask[i]) continue;
        if (later < s + d) {
          ASSERT_NE(a[i], b[i]) << "averaged too early: sent at " << s << ", step " << later;
        } else {
          ASSERT_EQ(a[i], (sent0[i] + sent1[i]) / 2) << "sent at " << s << ", entry " << i;
          ASSERT_EQ(b[i], a[i]);
        }
      }
    }
  }
}

TEST(Sparta, DeltaApplyEqualsOverwriteWithoutDelayAndKeepsLocalProgressWithDelay) {
  Config over = sparta_config(0.1, "sequential"), delta = over;
  delta.sparta.apply = "delta";
  auto a = run_with(over, 2, 8, 0.01, own_data, sparta_options());
  auto b = run_with(delta, 2, 8, 0.01, own_data, sparta_options());
  EXPECT_LT(max_abs_diff(a[0], b[0]), 1e-12);
  over.sparta.delay = delta.sparta.delay = 2;
  a = run_with(over, 2, 8, 0.01, own_data, sparta_options());
  b = run_with(delta, 2, 8, 0.01, own_data, sparta_options());
  EXPECT_GT(max_abs_diff(a[0], b[0]), 1e-6);
}

TEST(Sparta, IntervalKExchangesOnlyOnEveryKthStep) {
  Config cfg = sparta_config(0.05);
  cfg.sparta.interval = 4;
  Ledger l;
  RunOptions o = sparta_options();
  o.rank0_ledger = &l;
  run_with(cfg, 2, 12, 0.01, own_data, o);
  ASSERT_EQ(l.ops(), 3);
  for (const auto& e : l.entries()) EXPECT_EQ(e.step % 4, 3);
}

TEST(Sparta, FaultsSkipWholeExchangesOnEveryRankAtTheConfiguredRate) {
  Config cfg = sparta_config(0.05);
  cfg.sparta.fault_rate = 0.5;
  std::vector<Ledger> ledgers;
  run_with(cfg, 3, 200, 0.001, own_data, sparta_options(nullptr, &ledgers));
  // Binomial(200, 0.5) exchanges survive: mean 100, sd 7.
  EXPECT_NEAR(double(ledgers[0].ops()), 100, 30);
  for (const auto& l : ledgers) EXPECT_EQ(l.ops(), ledgers[0].ops());
}

TEST(Sparta, CosinePScheduleStartsHighEndsAtTheFloorAndAveragesP) {
  SpartaConfig c;
  c.p = 0.005;
  c.p_schedule = "cosine";
  c.p_min_factor = 0.1;
  const int64_t steps = 1000, warmup = 100;
  double sum = 0;
  for (int64_t t = 0; t < steps; ++t) sum += sparta_p_at(c, t, steps, warmup);
  EXPECT_NEAR(sum / steps, 0.005, 1e-12);
  EXPECT_DOUBLE_EQ(sparta_p_at(c, 0, steps, warmup), sparta_p_at(c, 99, steps, warmup));  // held in warm-up
  EXPECT_GT(sparta_p_at(c, 0, steps, warmup), 0.005);
  EXPECT_NEAR(sparta_p_at(c, steps, steps, warmup), 0.0005, 1e-15);
  c.p_schedule = "constant";
  EXPECT_EQ(sparta_p_at(c, 500, steps, warmup), 0.005);
}

TEST(Sparta, SpartaDiLoCoWithPZeroEqualsDiLoCo) {
  Config a = sparta_config(0.0), b = base_config("diloco", "adamw");
  a.strategy.name = "sparta_diloco";
  a.diloco.inner_steps = b.diloco.inner_steps = 4;
  auto x = run_with(a, 3, 12, 0.01, own_data, sparta_options());
  auto y = run_with(b, 3, 12, 0.01, own_data, sparta_options());
  for (int w = 0; w < 3; ++w) EXPECT_TRUE(bitwise_equal(x[w], y[w])) << "worker " << w;
}

TEST(Sparta, SpartaDiLoCoSendsBothTheSparseValuesAndThePseudoGradient) {
  Config cfg = sparta_config(0.1, "partitioned");
  cfg.strategy.name = "sparta_diloco";
  cfg.diloco.inner_steps = 5;
  Ledger l;
  RunOptions o = sparta_options();
  o.rank0_ledger = &l;
  run_with(cfg, 2, 10, 0.01, own_data, o);
  EXPECT_DOUBLE_EQ(l.sent_by_tag().at("sparse"), double(kParams) * 8);           // 10 exchanges of P/10
  EXPECT_DOUBLE_EQ(l.sent_by_tag().at("pseudo-grad"), 2 * double(kParams) * 8);  // 2 syncs of P
}

TEST(NoLoCo, OneGroupOfAllWorkersEqualsDiLoCoWithHeavyBallMomentum) {
  Config noloco = base_config("noloco", "adamw");
  noloco.noloco.inner_steps = 3;
  noloco.noloco.group_size = 4;
  noloco.noloco.outer_lr = 0.7;
  noloco.noloco.outer_momentum = 0.5;
  Config diloco = base_config("diloco", "adamw");
  diloco.diloco.inner_steps = 3;
  diloco.diloco.outer_lr = 0.7;
  diloco.diloco.outer_momentum = 0.5;
  diloco.diloco.nesterov = false;
  auto a = run(noloco, 4, 12, 0.01, own_data);
  auto b = run(diloco, 4, 12, 0.01, own_data);
  for (int w = 0; w < 4; ++w) EXPECT_LT(max_abs_diff(a[w], b[w]), 1e-12) << "worker " << w;
}

TEST(NoLoCo, PairsExchangeTwoPValuesPerSyncWhateverN) {
  for (int64_t n : {2, 4, 8}) {
    Config cfg = base_config("noloco", "adamw");
    cfg.noloco.inner_steps = 2;
    std::vector<Ledger> ledgers;
    RunOptions o;
    o.ledgers = &ledgers;
    auto final_params = run_with(cfg, n, 6, 0.01, own_data, o);
    for (const auto& l : ledgers) {
      EXPECT_EQ(l.ops(), 3) << "N = " << n;
      EXPECT_DOUBLE_EQ(l.total_sent(), 3 * 2 * 18 * 8) << "N = " << n;  // [phi, Delta], float64
      EXPECT_EQ(l.sent_by_tag().count("noloco"), 1u);
    }
    // Pairs end a sync bitwise equal; with N > 2 not everyone is.
    if (n > 2) {
      EXPECT_FALSE(bitwise_equal(final_params[0], final_params[1]) && bitwise_equal(final_params[0], final_params[2]) &&
                   bitwise_equal(final_params[0], final_params[3]));
    }
  }
}

// ---- topologies -------------------------------------------------------------

TEST(Topology, RingMixesEachWorkerWithItsTwoNeighboursAtOneThirdEach) {
  const int64_t n = 5;
  std::vector<at::Tensor> out(n);
  InProcessGroup group(n);
  on_threads(group, [&](int64_t r, Communicator& comm) {
    Mixer mixer(Topology::Ring, comm, 1);
    at::Tensor v = at::full({4}, double(r * r), at::kDouble);
    mixer.mix(v, 0, "params");
    out[r] = v;
  });
  for (int64_t r = 0; r < n; ++r) {
    const int64_t left = (r + n - 1) % n, right = (r + 1) % n;
    const double want = (double(left * left) + double(r * r) + double(right * right)) / 3.0;
    EXPECT_NEAR(out[r][0].item<double>(), want, 1e-12) << r;
  }
}

TEST(Topology, GossipPairsAreASharedRandomPartitionAndPairsEndEqual) {
  const int64_t n = 6;
  for (int64_t round = 0; round < 3; ++round) {
    auto groups = random_groups(n, 2, 1, round);
    std::set<int64_t> seen;
    for (const auto& g : groups) {
      EXPECT_EQ(g.size(), 2u);
      seen.insert(g.begin(), g.end());
    }
    EXPECT_EQ(seen.size(), size_t(n));
  }
  EXPECT_NE(random_groups(n, 2, 1, 0), random_groups(n, 2, 1, 1));
  std::vector<at::Tensor> out(n);
  InProcessGroup group(n);
  on_threads(group, [&](int64_t r, Communicator& comm) {
    Mixer mixer(Topology::Gossip, comm, 1);
    at::Tensor v = at::randn({16}, at::make_generator<at::CPUGeneratorImpl>(uint64_t(r)), at::kDouble);
    mixer.mix(v, 2, "params");
    out[r] = v;
  });
  for (const auto& g : random_groups(n, 2, 1, 2)) EXPECT_TRUE(at::equal(out[g[0]], out[g[1]]));
  EXPECT_FALSE(at::equal(out[0], out[1]) && at::equal(out[0], out[2]) && at::equal(out[0], out[3]));
}

// Every topology of the table mixes: a topology added to the table whose
// Mixer case is missing would leave the workers' values alone (and send
// nothing) without this. Averaging keeps the workers' mean.
TEST(Topology, EveryTopologyOfTheTableMovesEveryWorkerAndKeepsTheirMean) {
  const int64_t n = 4;
  for (const TopologyInfo& t : topology_table()) {
    std::vector<at::Tensor> out(n);
    InProcessGroup group(n);
    on_threads(group, [&](int64_t r, Communicator& comm) {
      Mixer mixer(t.value, comm, 1);
      at::Tensor v = at::full({3}, double(r * r), at::kDouble);
      mixer.mix(v, 0, "params");
      out[r] = v;
    });
    double before = 0, after = 0;
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_NE(out[r][0].item<double>(), double(r * r)) << t.name << ": worker " << r << " was not mixed";
      before += double(r * r);
      after += out[r][0].item<double>();
    }
    EXPECT_NEAR(after, before, 1e-9) << t.name;
  }
}

TEST(Topology, LocalSgdOnARingKeepsWorkersApartButCloserThanNoAveraging) {
  Config ring = base_config("localsgd", "adamw");
  ring.diloco.inner_steps = 1;
  ring.strategy.topology = "ring";
  Config none = ring;
  none.strategy.name = "sparta";
  none.sparta.p = 0;
  auto a = run(ring, 5, 20, 0.01, own_data);
  auto b = run(none, 5, 20, 0.01, own_data);
  EXPECT_FALSE(bitwise_equal(a[0], a[1]));
  EXPECT_LT(max_abs_diff(a[0], a[1]), max_abs_diff(b[0], b[1]));
}

// ---- correlation ------------------------------------------------------------

TEST(Correlation, IsOneForAffineCopiesMinusOneForNegatedAndNearZeroForIndependent) {
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(3);
  at::Tensor a = at::randn({1000}, gen), b = at::randn({200}, gen);
  auto same = parameter_correlation({{a, b}, {a * 2 + 3, b * 2 + 3}});
  EXPECT_NEAR(same.mean, 1.0, 1e-12);
  auto neg = parameter_correlation({{a, b}, {-a, -b}});
  EXPECT_NEAR(neg.mean, -1.0, 1e-12);
  auto indep = parameter_correlation({{a, b}, {at::randn({1000}, gen), at::randn({200}, gen)}, {a, b}});
  // Pairs: (0,1) ~ 0, (0,2) = 1, (1,2) ~ 0 -> mean ~ 1/3, min ~ 0.
  EXPECT_NEAR(indep.mean, 1.0 / 3.0, 0.05);
  EXPECT_NEAR(indep.min, 0.0, 0.1);
}

}  // namespace
}  // namespace atl
