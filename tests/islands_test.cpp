// Islands of devices end to end: D devices of batch B inside an island are
// one device of batch D x B; the exchange patterns move the same values at
// their formulas' costs; one device per island is the flat run bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/report.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "net/island_exchanges.h"
#include "tiny_data.h"

namespace atl {
namespace {

struct Trajectory {
  std::vector<double> loss, val_loss;
  nlohmann::json end;
};

Trajectory trajectory_of(const RunSummary& s) {
  Trajectory t;
  for (const auto& e : events_of(s)) {
    if (e["event"] == "train") t.loss.push_back(e["loss"].get<double>());
    if (e["event"] == "eval") t.val_loss.push_back(e["val_loss"].get<double>());
    if (e["event"] == "end") t.end = e;
  }
  return t;
}

Config islands_config(const std::string& strategy, int64_t islands, int64_t devices, const std::string& exchange) {
  Config cfg = tiny_config(strategy, islands * devices);
  cfg.islands.count = islands;
  cfg.islands.devices = devices;
  cfg.islands.exchange = exchange;
  cfg.sparta.p = 0.05;
  cfg.train.final_eval = "sample";
  return cfg;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double rel, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  ASSERT_FALSE(a.empty()) << what;
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], rel * std::abs(b[i])) << what << " entry " << i;
}

TEST(Islands, DDevicesOfBatchBInsideAnIslandEqualOneDeviceOfBatchDTimesB) {
  for (const char* strategy : {"diloco", "sparta", "ddp"}) {
    Config islands = islands_config(strategy, 2, 3, "leader");
    islands.train.batch_size = 2;
    Config single = islands_config(strategy, 2, 1, "flat");
    single.train.batch_size = 6;
    // The interim evaluations' fixed sample is drawn in batches of
    // train.batch_size, so only the full split is the same for both.
    islands.train.final_eval = single.train.final_eval = "full";
    const RunSummary ra = simulate(islands), rb = simulate(single);
    const Trajectory a = trajectory_of(ra), b = trajectory_of(rb);
    // Same data in the same order; only the order of float sums differs.
    expect_close(a.loss, b.loss, 1e-4, std::string(strategy) + " train loss");
    EXPECT_NEAR(ra.final_val_loss, rb.final_val_loss, 1e-4 * rb.final_val_loss) << strategy;
  }
}

TEST(Islands, OneDevicePerIslandIsTheFlatRunBitForBit) {
  for (const char* strategy : {"diloco", "sparta", "demo"}) {
    Config flat = tiny_config(strategy, 3);
    flat.train.final_eval = "sample";
    Config islands = flat;
    islands.islands.count = 3;
    islands.islands.devices = 1;
    islands.islands.exchange = "sharded";
    islands.network.intra_bandwidth = "1Mbit/s";  // unused with one device
    const Trajectory a = trajectory_of(simulate(flat)), b = trajectory_of(simulate(islands));
    EXPECT_EQ(a.loss, b.loss) << strategy;
    EXPECT_EQ(a.val_loss, b.val_loss) << strategy;
    EXPECT_EQ(a.end["sim_time_s"], b.end["sim_time_s"]) << strategy;
    EXPECT_EQ(a.end["bytes_sent_per_worker"], b.end["bytes_sent_per_worker"]) << strategy;
    EXPECT_FALSE(b.end.contains("intra_bytes_sent_per_worker")) << strategy;
  }
}

// DiLoCo's pseudo-gradient sync, 20 steps with H = 5: 4 syncs of S = 4P
// bytes. Per device, over the wide-area links (ALGORITHMS.md 7.2 islands):
//   flat:    2(ID-1)/(ID) S each;
//   leader:  2(I-1)/I S on the leader, 0 on the others;
//   sharded: 2(I-1)/I S/D each.
// Inside the island the gradient all-reduce sends 2(D-1)/D * 4P per step.
TEST(Islands, ExchangePatternsGiveTheSameParametersAndTheirFormulasBytes) {
  for (int64_t I : {2, 3, 4}) {
    for (int64_t D : {1, 2, 4}) {
      nlohmann::json hashes;
      for (const std::string& exchange : island_exchange_names()) {  // flat first: the reference
        Config cfg = islands_config("diloco", I, D, exchange);
        cfg.train.steps = 10;  // 2 syncs
        cfg.strategy.correlation_every = 0;
        const RunSummary s = simulate(cfg);
        const Trajectory t = trajectory_of(s);
        const std::string where = std::to_string(I) + "x" + std::to_string(D) + " " + exchange;
        if (hashes.is_null()) {
          hashes = t.end["params_hash_per_worker"];
        } else {
          EXPECT_EQ(t.end["params_hash_per_worker"], hashes) << where;
        }
        const double S = 4.0 * double(s.params), syncs = 2, n = double(I * D);
        const auto& ledger = t.end["ledger_per_worker"];
        ASSERT_EQ(int64_t(ledger.size()), I * D) << where;
        for (int64_t r = 0; r < I * D; ++r) {
          double wan = -1;
          if (exchange == "flat") wan = 2.0 * (n - 1.0) / n * S;
          if (exchange == "leader") wan = r % D == 0 ? 2.0 * (I - 1.0) / double(I) * S : 0.0;
          if (exchange == "sharded") wan = 2.0 * (I - 1.0) / double(I) * S / double(D);
          ASSERT_GE(wan, 0) << "exchange '" << exchange << "' has no hand-worked bytes in this test: add its formula";
          EXPECT_NEAR(ledger[r]["sent"].get<double>(), syncs * wan, 1e-9 * S) << where << " worker " << r;
          if (D == 1) {
            EXPECT_FALSE(ledger[r].contains("intra_sent")) << where;
            continue;
          }
          const double grads = 10 * 2.0 * (D - 1.0) / double(D) * S;
          double sync_intra = 0;  // per sync, this device's bytes sent inside the island
          if (exchange == "leader") {
            const int64_t d = r % D;
            const double children = double((2 * d + 1 < D) + (2 * d + 2 < D));
            sync_intra = (d != 0 ? S : 0.0) + children * S;  // reduce up the tree, broadcast down
          }
          if (exchange == "sharded") sync_intra = 2.0 * (D - 1.0) / double(D) * S;
          EXPECT_NEAR(ledger[r]["intra_sent"].get<double>(), grads + syncs * sync_intra, 1e-9 * S)
              << where << " worker " << r;
        }
      }
    }
  }
}

// Leader and sharded move all-reduces their own way (the leaders, or 1/D
// slices and an all-gather): blocking (SPARTA), in flight over steps
// (Streaming DiLoCo) and in DDP's buckets, the values are the flat ones.
TEST(Islands, LeaderAndShardedDataPathsGiveTheFlatValuesForEveryKindOfAllReduce) {
  for (const char* strategy : {"sparta", "streaming", "ddp", "noloco", "demo"}) {
    nlohmann::json flat;
    for (const std::string& exchange : island_exchange_names()) {  // flat first: the reference
      Config cfg = islands_config(strategy, 2, 3, exchange);
      cfg.train.steps = 12;
      cfg.noloco.inner_steps = 4;
      cfg.streaming.fragment_blocks = 1;
      cfg.ddp.bucket_mb = 0.01;  // several buckets
      cfg.ddp.first_bucket_mb = 0.01;
      const Trajectory t = trajectory_of(simulate(cfg));
      if (flat.is_null()) {
        flat = t.end["params_hash_per_worker"];
        continue;
      }
      EXPECT_EQ(t.end["params_hash_per_worker"], flat) << strategy << " " << exchange;
    }
  }
}

TEST(Islands, LeaderExchangeCostsFewerWideAreaBytesButChargesTheIslandsLinks) {
  Config flat = islands_config("diloco", 2, 4, "flat"), leader = islands_config("diloco", 2, 4, "leader");
  for (Config* c : {&flat, &leader}) {
    c->network.bandwidth = "100Mbit/s";
    c->network.intra_bandwidth = "10Gbit/s";
  }
  const RunSummary f = simulate(flat), l = simulate(leader);
  EXPECT_LT(l.bytes_sent_per_worker, f.bytes_sent_per_worker / 4);
  EXPECT_LT(l.sim_seconds, f.sim_seconds);
  EXPECT_GT(l.intra_bytes_sent_per_worker, 0);
}

TEST(Islands, ASharedUplinkSlowsShardedExchangeButNotItsValues) {
  Config own = islands_config("diloco", 2, 4, "sharded");
  own.network.bandwidth = "100Mbit/s";
  Config shared = own;
  shared.network.island_uplink = "shared";
  const RunSummary a = simulate(own), b = simulate(shared);
  EXPECT_GT(b.sim_seconds, a.sim_seconds);
  EXPECT_EQ(trajectory_of(a).end["params_hash_per_worker"], trajectory_of(b).end["params_hash_per_worker"]);
  EXPECT_EQ(a.bytes_sent_per_worker, b.bytes_sent_per_worker);
}

TEST(Islands, ResumingAnIslandsRunContinuesItBitwise) {
  testing::TempDir dir;
  Config cfg = islands_config("diloco", 2, 2, "sharded");
  cfg.run.out_dir = dir.path("runs");
  cfg.run.name = "whole";
  const RunSummary whole = train(cfg);
  Config part = cfg;
  part.run.name = "parts";
  part.run.stop_at = 12;
  part.run.checkpoint_every = 4;
  EXPECT_GE(train(part).stopped_at, 0);
  part.run.stop_at = 0;
  part.run.resume = "true";
  const RunSummary resumed = train(part);
  EXPECT_EQ(trajectory_of(resumed).end["params_hash_per_worker"], trajectory_of(whole).end["params_hash_per_worker"]);
  EXPECT_EQ(resumed.sim_seconds, whole.sim_seconds);
  EXPECT_EQ(resumed.intra_bytes_sent_per_worker, whole.intra_bytes_sent_per_worker);
}

TEST(Islands, CompareTablesNameTheLayoutAndSplitBytesByLinkClass) {
  testing::TempDir dir;
  Config islands = islands_config("diloco", 2, 2, "leader");
  islands.run.out_dir = dir.str();
  islands.run.name = "d2x2";
  Config flat = islands_config("ddp", 4, 1, "flat");
  flat.run.out_dir = dir.str();
  flat.run.name = "ddp4";
  const RunSummary a = train(islands), b = train(flat);
  const std::string table = compare_runs({b.run_dir, a.run_dir});
  EXPECT_NE(table.find("| 2x2 leader |"), std::string::npos) << table;
  EXPECT_NE(table.find("| 4 |"), std::string::npos) << table;
  const std::string inside = "d2x2 " + format_megabytes(a.intra_bytes_sent_per_worker) + " MB in ";
  EXPECT_NE(table.find(inside), std::string::npos) << table;
  const std::string note = table.substr(table.find("Islands ("));
  EXPECT_EQ(note.find("ddp4"), std::string::npos) << "no islands, no entry: " << note;
  const RunData d = load_run(a.run_dir);
  EXPECT_GT(d.intra_network_seconds, 0);
  EXPECT_GT(d.network_seconds, 0);
}

TEST(Islands, LayoutsThatDoNotFitTheWorkersAreRefusedWithTheFix) {
  auto errors_of = [](Config c) {
    std::string all;
    for (const auto& e : validate(c)) all += e + "\n";
    return all;
  };
  Config c = tiny_config("diloco", 6);
  c.islands.count = 4;
  EXPECT_NE(errors_of(c).find("islands.count = 4 does not divide strategy.workers = 6"), std::string::npos);
  c.islands.count = 2;
  c.islands.devices = 2;
  EXPECT_NE(errors_of(c).find("set strategy.workers = 4"), std::string::npos);
  c.islands.devices = 3;
  c.islands.exchange = "mesh";
  EXPECT_NE(errors_of(c).find("islands.exchange"), std::string::npos);
  c.islands.exchange = "leader";
  c.network.outages = "1@1s-2s";
  EXPECT_NE(errors_of(c).find("network.outages is not supported with islands.devices > 1"), std::string::npos);
  c.network.outages = "";
  c.network.island_bandwidth = "1Gbit/s,1Gbit/s,1Gbit/s";
  EXPECT_NE(errors_of(c).find("network.island_bandwidth: 3 entries for 2 islands"), std::string::npos);
  c.network.island_bandwidth = "";
  c.network.intra_bandwidth = "fast";
  EXPECT_NE(errors_of(c).find("network.intra_bandwidth"), std::string::npos);
  c.network.intra_bandwidth = "400Gbit/s";
  c.network.island_uplink = "one";
  EXPECT_NE(errors_of(c).find("network.island_uplink"), std::string::npos);
  c.network.island_uplink = "shared";
  EXPECT_EQ(errors_of(c), "");
  EXPECT_EQ(island_layout(c).islands, 2);
  EXPECT_EQ(island_layout(c).devices, 3);
  c.islands.devices = 0;  // from the count
  EXPECT_EQ(island_layout(c).devices, 3);
}

}  // namespace
}  // namespace atl
