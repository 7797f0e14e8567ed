// Tests for the islands' cost model (src/net/islands.cpp), NetworkModel's
// op_seconds_for, and `atoll cost --islands` (src/net/cost.cpp).
// Expected values come from the closed formulas of ALGORITHMS.md 7.2's
// islands table, written out here, or are worked out by hand in comments.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/cost.h"
#include "atoll/net.h"
#include "net/collective_algorithms.h"
#include "net/island_exchanges.h"
#include "test_util.h"

namespace atl {
namespace {

using testing::invalid_argument_message;

const CommOp kAllOps[] = {CommOp::AllReduce, CommOp::AllGather, CommOp::Broadcast, CommOp::Barrier,
                          CommOp::Exchange,  CommOp::Send,      CommOp::Recv};
// Every exchange of the island exchange table, in its order.
std::vector<IslandExchange> all_exchanges() {
  std::vector<IslandExchange> out;
  for (const IslandExchangeInfo& x : island_exchanges()) out.push_back(x.exchange);
  return out;
}
const std::vector<IslandExchange> kAllExchanges = all_exchanges();

// An exchange's entry in a test's table of hand-worked figures; a missing
// one fails, naming the exchange that needs them.
double figure_for(const std::map<IslandExchange, double>& figures, IslandExchange ex, const std::string& what) {
  const auto it = figures.find(ex);
  if (it == figures.end()) {
    ADD_FAILURE() << "exchange '" << to_string(ex) << "' has no hand-worked " << what
                  << " in this test: add its row of ALGORITHMS.md 7.2's islands table";
    return std::numeric_limits<double>::quiet_NaN();
  }
  return it->second;
}

NetworkModel uniform_wan(int64_t islands, double bandwidth, double latency, double jitter = 0,
                         CollectiveAlgo algo = CollectiveAlgo::Ring) {
  return NetworkModel(std::vector<Link>(static_cast<std::size_t>(islands), Link{bandwidth, latency}), algo, 0.0, jitter,
                      7);
}

// Relative closeness for sums of a few terms computed in another order.
void expect_close(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-12 * std::max(1.0, std::fabs(want))) << what;
}

// ------------------------------------------------------ op_seconds_for

TEST(IslandsNet, OpSecondsForTakesTheScheduleFromNAndTheLinksFromTheParticipants) {
  // Links: 0: 2e6 B/s, 10 ms; 1: 1e6 B/s, 30 ms; 2: 4e6 B/s, 20 ms.
  const NetworkModel net({{2e6, 0.01}, {1e6, 0.03}, {4e6, 0.02}}, CollectiveAlgo::Ring, 0.0, 0.0, 1);
  // Participants {0, 2}: beta = 2e6, alpha = 0.02. n = 6, S = 3e6:
  // 2*5*0.02 + 2*5/6 * 3e6/2e6 = 0.2 + 2.5 = 2.7 s.
  EXPECT_NEAR(net.op_seconds_for(CommOp::AllReduce, 3e6, {0, 2}, 6, 0), 2.7, 1e-12);
  // All three: beta = 1e6, alpha = 0.03; n = 4, S = 1e6 broadcast: 2*0.03 + 1 = 1.06 s.
  EXPECT_NEAR(net.op_seconds_for(CommOp::Broadcast, 1e6, {0, 1, 2}, 4, 0), 1.06, 1e-12);
  // Pairwise ops do not depend on n: alpha + S/beta = 0.02 + 0.5 = 0.52 s.
  for (int64_t n : {2, 5, 64}) {
    EXPECT_NEAR(net.op_seconds_for(CommOp::Exchange, 1e6, {0, 2}, n, 0), 0.52, 1e-12) << n;
  }
  // n = |participants| is op_seconds, bit for bit.
  for (CommOp op : kAllOps) {
    EXPECT_EQ(net.op_seconds_for(op, 5e5, {0, 1, 2}, 3, 4), net.op_seconds(op, 5e5, {0, 1, 2}, 4)) << to_string(op);
  }
}

TEST(IslandsNet, OpSecondsForRejectsFewerRanksThanParticipantsAndRanksWithoutLinks) {
  const NetworkModel net = uniform_wan(3, 1e6, 0);
  EXPECT_NE(invalid_argument_message([&] {
              net.op_seconds_for(CommOp::AllReduce, 1, {0, 1, 2}, 2, 0);
            }).find("fewer than the 3 participants"),
            std::string::npos);
  EXPECT_NE(invalid_argument_message([&] {
              net.op_seconds_for(CommOp::AllReduce, 1, {}, 4, 0);
            }).find("need the participants"),
            std::string::npos);
  EXPECT_EQ(net.op_seconds_for(CommOp::AllReduce, 1, {}, 0, 0), 0.0);  // op_seconds of nobody
}

// ------------------------------------------------ the islands table

// lg(D) = ceil(log2 D) for the D these tests use.
double lg(int64_t d) { return d == 4 ? 2.0 : d == 2 ? 1.0 : 0.0; }

TEST(IslandsNet, AllReduceSecondsAreTheTablesFormulasForEveryExchange) {
  const double s = 3e6, beta = 2e6, alpha = 0.015, b_in = 5e8, a_in = 2e-4;
  for (int64_t islands : {2, 3, 4}) {
    for (int64_t d : {1, 2, 4}) {
      const double i = static_cast<double>(islands), dd = static_cast<double>(d);
      // The three rows of ALGORITHMS.md 7.2's islands table (ring).
      const double flat = 2 * (i * dd - 1) * alpha + 2 * (i * dd - 1) / (i * dd) * s / beta;
      const double t_tree = d > 1 ? lg(d) * a_in + s / b_in : 0.0;
      const double leader = t_tree + 2 * (i - 1) * alpha + 2 * (i - 1) / i * s / beta + t_tree;
      const double ring_in = (dd - 1) * a_in + (dd - 1) / dd * s / b_in;
      const double sharded = 2 * ring_in + 2 * (i - 1) * alpha + 2 * (i - 1) / i * (s / dd) / beta;
      const std::map<IslandExchange, double> want = {
          {IslandExchange::Flat, flat}, {IslandExchange::Leader, leader}, {IslandExchange::Sharded, sharded}};
      const std::map<IslandExchange, double> want_intra = {
          {IslandExchange::Flat, 0.0}, {IslandExchange::Leader, 2 * t_tree}, {IslandExchange::Sharded, 2 * ring_in}};
      for (IslandExchange ex : kAllExchanges) {
        const IslandNetwork net(uniform_wan(islands, beta, alpha), Link{b_in, a_in}, d, ex);
        const std::string what = to_string(ex) + " I=" + std::to_string(islands) + " D=" + std::to_string(d);
        for (int64_t dev = 0; dev < d; ++dev) {
          const OpCharge c = net.charge(CommOp::AllReduce, s, s, 0, dev, false, {}, 0);
          expect_close(c.seconds, figure_for(want, ex, "all-reduce time"), what);
          expect_close(c.intra_seconds, figure_for(want_intra, ex, "time inside the island"), what);
        }
      }
    }
  }
}

TEST(IslandsNet, AllReduceOfFourIslandsOfFourMatchesFiguresWorkedByHand) {
  // S = 1e6 B, beta = 1e6 B/s, alpha = 10 ms, b_in = 1e8 B/s, a_in = 0.1 ms, I = D = 4.
  const double s = 1e6;
  auto seconds = [&](IslandExchange ex) {
    return IslandNetwork(uniform_wan(4, 1e6, 0.01), Link{1e8, 1e-4}, 4, ex)
        .charge(CommOp::AllReduce, s, s, 0, 0, false, {}, 0)
        .seconds;
  };
  // flat: 2*15*0.01 + 2*15/16 * 1 = 0.3 + 1.875 = 2.175 s.
  EXPECT_NEAR(seconds(IslandExchange::Flat), 2.175, 1e-12);
  // leader: T = 2*1e-4 + 0.01 = 0.0102; 2*3*0.01 + 1.5*1 = 1.56; 1.56 + 2*0.0102 = 1.5804 s.
  EXPECT_NEAR(seconds(IslandExchange::Leader), 1.5804, 1e-12);
  // sharded: 2*(3e-4 + 0.75*0.01) = 0.0156; 0.06 + 1.5*0.25 = 0.435; 0.4506 s.
  EXPECT_NEAR(seconds(IslandExchange::Sharded), 0.4506, 1e-12);
}

TEST(IslandsNet, ASharedUplinkGivesFlatAndShardedADthOfItAndLeaderAllOfIt) {
  // As above, but the 4 devices of an island share one 1e6 B/s uplink.
  const double s = 1e6;
  auto seconds = [&](IslandExchange ex) {
    return IslandNetwork(uniform_wan(4, 1e6, 0.01), Link{1e8, 1e-4}, 4, ex, /*shared_uplink=*/true)
        .charge(CommOp::AllReduce, s, s, 0, 0, false, {}, 0)
        .seconds;
  };
  // flat at beta / 4: 0.3 + 2*15/16 * 4 = 7.8 s.
  EXPECT_NEAR(seconds(IslandExchange::Flat), 7.8, 1e-12);
  // leader: one device on the uplink, unchanged: 1.5804 s.
  EXPECT_NEAR(seconds(IslandExchange::Leader), 1.5804, 1e-12);
  // sharded: 0.0156 + 0.06 + 1.5 * 0.25 * 4 = 1.5756 s, leader's cross time plus its own inside terms.
  EXPECT_NEAR(seconds(IslandExchange::Sharded), 1.5756, 1e-12);
  // One device per island: nothing is shared, the flat model.
  const IslandNetwork one(uniform_wan(4, 1e6, 0.01), Link{1e8, 1e-4}, 1, IslandExchange::Sharded, true);
  EXPECT_EQ(one.charge(CommOp::AllReduce, s, s, 0, 0, false, {}, 0).seconds,
            uniform_wan(4, 1e6, 0.01).collective_seconds(CommOp::AllReduce, s, 0));
}

TEST(IslandsNet, PerDeviceBytesSumPerIslandToTheTablesWideAreaBytes) {
  const double s = 8e6;
  for (int64_t islands : {2, 3, 4}) {
    for (int64_t d : {1, 2, 4}) {
      const double i = static_cast<double>(islands), dd = static_cast<double>(d);
      // Wide-area bytes per island (each way): flat D*2(ID-1)/(ID)*S, leader
      // and sharded 2(I-1)/I*S. Inside an island, leader: (D-1)*S up the tree
      // and (D-1)*S down; sharded: D devices x 2(D-1)/D*S; flat: none.
      const std::map<IslandExchange, double> wan_figures = {
          {IslandExchange::Flat, dd * 2 * (i * dd - 1) / (i * dd) * s},
          {IslandExchange::Leader, 2 * (i - 1) / i * s},
          {IslandExchange::Sharded, 2 * (i - 1) / i * s}};
      const std::map<IslandExchange, double> intra_figures = {{IslandExchange::Flat, 0.0},
                                                              {IslandExchange::Leader, 2 * (dd - 1) * s},
                                                              {IslandExchange::Sharded, 2 * (dd - 1) * s}};
      for (IslandExchange ex : kAllExchanges) {
        const double wan = figure_for(wan_figures, ex, "wide-area bytes"),
                     intra = figure_for(intra_figures, ex, "bytes inside the island");
        const IslandNetwork net(uniform_wan(islands, 1e6, 0.01), Link{1e9, 1e-5}, d, ex);
        const std::string what = to_string(ex) + " I=" + std::to_string(islands) + " D=" + std::to_string(d);
        double sent = 0, received = 0, intra_sent = 0, intra_received = 0, busiest = 0;
        for (int64_t dev = 0; dev < d; ++dev) {
          const OpCharge c = net.charge(CommOp::AllReduce, s, s, 0, dev, false, {}, 0);
          sent += c.sent;
          received += c.received;
          intra_sent += c.intra_sent;
          intra_received += c.intra_received;
          busiest = std::max(busiest, c.sent);
        }
        expect_close(sent, wan, what);
        expect_close(received, wan, what);
        expect_close(intra_sent, intra, what);
        expect_close(intra_received, intra, what);
        // Leader: all on the leader's link; flat and sharded: spread evenly over the D links.
        expect_close(busiest, ex == IslandExchange::Leader ? wan : wan / dd, what);
      }
    }
  }
}

TEST(IslandsNet, LeaderMovesBytesInsideTheIslandAlongABinaryTree) {
  // D = 4: 0 -> {1, 2}, 1 -> {3}. S = 10 B, I = 2.
  const IslandNetwork net(uniform_wan(2, 1e6, 0), Link{1e9, 0}, 4, IslandExchange::Leader);
  const double sent[] = {20, 20, 10, 10};      // reduce: S to the parent; broadcast: S per child
  const double received[] = {20, 20, 10, 10};  // reduce: S per child; broadcast: S from the parent
  for (int64_t dev = 0; dev < 4; ++dev) {
    const OpCharge c = net.charge(CommOp::AllReduce, 10, 10, 0, dev, false, {}, 0);
    EXPECT_EQ(c.intra_sent, sent[dev]) << dev;
    EXPECT_EQ(c.intra_received, received[dev]) << dev;
    EXPECT_EQ(c.sent, dev == 0 ? 10.0 : 0.0) << dev;  // 2(2-1)/2 * 10, by the leader only
  }
  // A broadcast needs no reduce: only the tree broadcast of S inside.
  const OpCharge b = net.charge(CommOp::Broadcast, 10, 10, 0, 1, false, {}, 0);
  EXPECT_EQ(b.intra_sent, 10.0);
  EXPECT_EQ(b.intra_received, 10.0);
}

TEST(IslandsNet, AllGatherCountsOtherIslandsPayloadsPerExchange) {
  // I = 3, D = 2, this island's S = 6, the others bring 4 + 8 = 12; R = 18.
  const NetworkModel wan = uniform_wan(3, 1e6, 0);
  const Link intra{1e9, 0};
  const OpCharge f =
      IslandNetwork(wan, intra, 2, IslandExchange::Flat).charge(CommOp::AllGather, 6, 8, 12, 1, false, {}, 0);
  EXPECT_EQ(f.sent, 30.0);      // (3*2 - 1) * 6
  EXPECT_EQ(f.received, 30.0);  // 2*12 + (2-1)*6
  const OpCharge l =
      IslandNetwork(wan, intra, 2, IslandExchange::Leader).charge(CommOp::AllGather, 6, 8, 12, 0, false, {}, 0);
  EXPECT_EQ(l.sent, 12.0);        // (3-1) * 6
  EXPECT_EQ(l.received, 12.0);    // others
  EXPECT_EQ(l.intra_sent, 18.0);  // the leader broadcasts R to its one child
  const OpCharge sh =
      IslandNetwork(wan, intra, 2, IslandExchange::Sharded).charge(CommOp::AllGather, 6, 8, 12, 1, false, {}, 0);
  EXPECT_EQ(sh.sent, 6.0);        // (3-1) * 6/2
  EXPECT_EQ(sh.received, 6.0);    // 12/2
  EXPECT_EQ(sh.intra_sent, 9.0);  // (2-1)/2 * 18
}

TEST(IslandsNet, OneDevicePerIslandIsTheFlatNetworkModelBitwise) {
  // Uneven links and jitter, so that every term of the flat model is exercised.
  const std::vector<Link> links = {{3e6, 0.01}, {1e6, 0.04}, {2e6, 0.02}, {5e6, 0.03}};
  const std::vector<std::vector<int64_t>> subsets = {{}, {1, 3}, {0, 2, 3}, {2}};
  for (const CollectiveAlgorithm& a : collective_algorithms()) {
    const CollectiveAlgo algo = a.algo;
    const NetworkModel wan(links, algo, 4e6, 0.25, 11);
    for (IslandExchange ex : kAllExchanges) {
      const IslandNetwork net(wan, Link{1e9, 1e-4}, 1, ex);
      for (CommOp op : kAllOps) {
        for (const auto& subset : subsets) {
          std::vector<int64_t> ranks = subset;
          if (ranks.empty()) ranks = {0, 1, 2, 3};
          const int64_t p = static_cast<int64_t>(ranks.size());
          const double s = 1.5e6;
          const double others = (static_cast<double>(p) - 1.0) * s;  // all-gather of equal payloads
          for (bool root : {false, true}) {
            const std::string what = to_string(ex) + " " + to_string(op) + " " + to_string(algo) +
                                     " p=" + std::to_string(p) + (root ? " root" : "");
            const OpCharge c = net.charge(op, s, s, others, 0, root, subset, 9);
            const ByteCount b = bytes_for(op, algo, s, p, root);
            EXPECT_EQ(c.seconds, wan.op_seconds(op, s, ranks, 9)) << what;
            EXPECT_EQ(c.sent, b.sent) << what;
            EXPECT_EQ(c.received, b.received) << what;
            EXPECT_EQ(c.intra_sent, 0.0) << what;
            EXPECT_EQ(c.intra_received, 0.0) << what;
            EXPECT_EQ(c.intra_seconds, 0.0) << what;
          }
        }
      }
    }
  }
}

TEST(IslandsNet, JitterIsAddedOnceToTheWideAreaOpAndIsTheSameForEveryDevice) {
  const double jitter = 0.5, s = 2e6;
  const NetworkModel calm = uniform_wan(3, 1e6, 0.01, 0.0);
  const NetworkModel jumpy = uniform_wan(3, 1e6, 0.01, jitter);
  for (IslandExchange ex : kAllExchanges) {
    const IslandNetwork quiet(calm, Link{1e8, 1e-4}, 4, ex), noisy(jumpy, Link{1e8, 1e-4}, 4, ex);
    for (CommOp op : kAllOps) {
      for (uint64_t index : {0u, 1u, 17u}) {
        // The one draw of the wide-area model for this op (it depends on the
        // op's index only, not on n or the payload).
        const double draw =
            jumpy.op_seconds(CommOp::Barrier, 0, {0, 1}, index) - calm.op_seconds(CommOp::Barrier, 0, {0, 1}, index);
        ASSERT_GE(draw, 0.0);
        ASSERT_LT(draw, jitter);
        const std::string what = to_string(ex) + " " + to_string(op) + " #" + std::to_string(index);
        const OpCharge first = noisy.charge(op, s, s, 2 * s, 0, true, {}, index);
        for (int64_t dev = 0; dev < 4; ++dev) {
          const OpCharge c = noisy.charge(op, s, s, 2 * s, dev, true, {}, index);
          const OpCharge q = quiet.charge(op, s, s, 2 * s, dev, true, {}, index);
          EXPECT_EQ(c.seconds, first.seconds) << what << " device " << dev;
          EXPECT_NEAR(c.seconds - q.seconds, draw, 1e-9) << what << " device " << dev;
          EXPECT_EQ(c.intra_seconds, q.intra_seconds) << what;  // no jitter inside the island
        }
      }
    }
  }
}

TEST(IslandsNet, BadConstructorArgumentsAreRejectedNamingTheField) {
  const NetworkModel wan = uniform_wan(2, 1e6, 0);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (int64_t d : {0, -3}) {
    const std::string msg = invalid_argument_message([&] {
      IslandNetwork(wan, Link{1e9, 0}, d, IslandExchange::Leader);
    });
    EXPECT_NE(msg.find("islands.devices must be >= 1"), std::string::npos) << msg;
  }
  for (double b : {0.0, -1.0, inf, nan}) {
    const std::string msg = invalid_argument_message([&] {
      IslandNetwork(wan, Link{b, 0}, 2, IslandExchange::Leader);
    });
    EXPECT_NE(msg.find("network.intra_bandwidth must be a finite rate > 0"), std::string::npos) << msg;
  }
  for (double l : {-1e-3, inf, nan}) {
    const std::string msg = invalid_argument_message([&] {
      IslandNetwork(wan, Link{1e9, l}, 2, IslandExchange::Leader);
    });
    EXPECT_NE(msg.find("network.intra_latency must be a finite duration >= 0"), std::string::npos) << msg;
  }
  const IslandNetwork net(wan, Link{1e9, 0}, 2, IslandExchange::Sharded);
  EXPECT_THROW(net.charge(CommOp::AllReduce, 1, 1, 0, 2, false, {}, 0), std::out_of_range);   // device
  EXPECT_THROW(net.charge(CommOp::AllReduce, 1, 1, 0, 0, false, {5}, 0), std::out_of_range);  // island
  EXPECT_THROW(net.charge(CommOp::AllReduce, -1, 1, 0, 0, false, {}, 0), std::invalid_argument);
}

TEST(IslandsNet, ExchangeNamesRoundTripAndUnknownNamesListTheAllowedOnes) {
  for (IslandExchange ex : kAllExchanges) EXPECT_EQ(parse_exchange(to_string(ex)), ex);
  const std::string msg = invalid_argument_message([] { parse_exchange("ring"); });
  EXPECT_NE(msg.find("'ring'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("flat | leader | sharded"), std::string::npos) << msg;
}

// ------------------------------------------------------ atoll cost

CostQuery seven_billion_on_eight_islands_of_eight() {
  CostQuery q;  // 7e9 parameters, bf16, 1000 steps, ring, no latency
  q.islands = 8;
  q.devices = 8;
  q.intra_bandwidth = parse_bandwidth("400Gbit/s");  // 50e9 B/s
  q.bandwidth = parse_bandwidth("1Gbit/s");          // 125e6 B/s
  q.strategy = "diloco";                             // H = 500: 2 syncs
  return q;
}

TEST(IslandsCost, SevenBillionOnEightIslandsOfEightGivesEachExchangesHandFigures) {
  const CostReport r = estimate_cost(seven_billion_on_eight_islands_of_eight());
  // S = 14e9 B; S/beta = 112 s; S/b_in = 0.28 s.
  ASSERT_EQ(r.exchanges.size(), 3u);
  const IslandCostRow &flat = r.exchanges[0], &leader = r.exchanges[1], &sharded = r.exchanges[2];
  EXPECT_EQ(flat.name, "flat");
  EXPECT_EQ(leader.name, "leader");
  EXPECT_EQ(sharded.name, "sharded");
  // flat: 2*63/64 * 112 = 220.5 s; 27.5625e9 B per device, 8 of them per island.
  EXPECT_NEAR(flat.sync_seconds, 220.5, 1e-9);
  EXPECT_NEAR(flat.wan_bytes_busiest_link, 27.5625e9, 1);
  EXPECT_NEAR(flat.wan_bytes_per_island, 220.5e9, 1);
  EXPECT_EQ(flat.intra_bytes_per_island, 0.0);
  // leader: 0.28 (reduce: lg 8 * 0 + 0.28) + 2*7/8 * 112 = 196 + 0.28 (broadcast) = 196.56 s;
  // 24.5e9 B, all by the leader; inside: 7 * 14e9 up + 7 * 14e9 down = 196e9 B.
  EXPECT_NEAR(leader.sync_seconds, 196.56, 1e-9);
  EXPECT_NEAR(leader.sync_intra_seconds, 0.56, 1e-12);
  EXPECT_NEAR(leader.wan_bytes_per_island, 24.5e9, 1);
  EXPECT_NEAR(leader.wan_bytes_busiest_link, 24.5e9, 1);
  EXPECT_NEAR(leader.intra_bytes_per_island, 196e9, 1);
  // sharded: 2 * 7/8 * 0.28 = 0.49 s inside + 2*7/8 * 112/8 = 24.5 s across = 24.99 s;
  // 24.5e9 B per island, 3.0625e9 B per device link; inside 8 * 2*7/8 * 14e9 = 196e9 B.
  EXPECT_NEAR(sharded.sync_seconds, 24.99, 1e-9);
  EXPECT_NEAR(sharded.wan_bytes_per_island, 24.5e9, 1);
  EXPECT_NEAR(sharded.wan_bytes_busiest_link, 3.0625e9, 1);
  EXPECT_NEAR(sharded.intra_bytes_per_island, 196e9, 1);
  // DiLoCo: floor(1000/500) = 2 syncs; DDP: the gradient flat over 64 devices every step.
  EXPECT_EQ(leader.syncs, 2);
  EXPECT_NEAR(leader.run_comm_seconds, 393.12, 1e-9);
  EXPECT_EQ(r.ddp.syncs, 1000);
  EXPECT_NEAR(r.ddp.sync_seconds, 220.5, 1e-9);
  EXPECT_NEAR(r.ddp.run_comm_seconds, 220500, 1e-6);
  // The single-level fields are the flat exchange's (N = 64).
  EXPECT_NEAR(r.sync_seconds, 220.5, 1e-9);
  EXPECT_NEAR(r.sync_bytes_sent, 27.5625e9, 1);
  // DDP inside an island each step: 2*7/8 * 0.28 = 0.49 s.
  EXPECT_NEAR(r.island_ddp_step_seconds, 0.49, 1e-12);
}

// The line of `text` that starts with `prefix` ("" if none).
std::string line_starting(const std::string& text, const std::string& prefix, int skip = 0) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0 && skip-- == 0) return line;
  }
  return "";
}

TEST(IslandsCost, FormattedReportShowsOneSyncPerExchangeNextToDdpAndTheRunTotals) {
  const CostQuery q = seven_billion_on_eight_islands_of_eight();
  const std::string text = format_cost(q, estimate_cost(q));
  EXPECT_NE(text.find("8 islands x 8 devices = 64 devices"), std::string::npos) << text;
  EXPECT_NE(text.find("wide-area 1 Gbit/s per device link"), std::string::npos) << text;
  EXPECT_NE(text.find("inside an island 400 Gbit/s"), std::string::npos) << text;
  // One-sync table (first match of each label), then the run table (second).
  const std::string flat = line_starting(text, "  flat "), leader = line_starting(text, "  leader "),
                    sharded = line_starting(text, "  sharded "), ddp = line_starting(text, "  ddp ");
  EXPECT_NE(flat.find("220 s (3.67 min)"), std::string::npos) << text;    // 220.5 s
  EXPECT_NE(flat.find("220 GB"), std::string::npos) << text;              // 220.5e9 B per island (%.3g: tie to even)
  EXPECT_NE(flat.find("27.6 GB"), std::string::npos) << text;             // busiest link
  EXPECT_NE(leader.find("197 s (3.28 min)"), std::string::npos) << text;  // 196.56 s
  EXPECT_NE(leader.find("0.56 s"), std::string::npos) << text;            // of which inside
  EXPECT_NE(leader.find("196 GB"), std::string::npos) << text;            // sent inside the island
  EXPECT_NE(sharded.find("25 s"), std::string::npos) << text;             // 24.99 s
  EXPECT_NE(sharded.find("3.06 GB"), std::string::npos) << text;          // 3.0625e9 per device link
  EXPECT_NE(ddp.find("220 s (3.67 min)"), std::string::npos) << text;
  EXPECT_NE(text.find("syncs in run: 2 (ddp: 1000)"), std::string::npos) << text;
  const std::string leader_run = line_starting(text, "  leader ", 1), ddp_run = line_starting(text, "  ddp ", 1);
  EXPECT_NE(leader_run.find("393 s (6.55 min)"), std::string::npos) << text;   // 2 * 196.56 s
  EXPECT_NE(ddp_run.find("220500 s (2.55 days)"), std::string::npos) << text;  // 1000 * 220.5 s
  EXPECT_NE(text.find("0.49 s per step, 490 s (8.17 min) in the run"), std::string::npos) << text;
}

TEST(IslandsCost, ChosenExchangeAloneGetsRunTotals) {
  CostQuery q = seven_billion_on_eight_islands_of_eight();
  q.exchange = "sharded";
  const CostReport r = estimate_cost(q);
  EXPECT_FALSE(r.exchanges[0].chosen);
  EXPECT_FALSE(r.exchanges[1].chosen);
  EXPECT_TRUE(r.exchanges[2].chosen);
  const std::string text = format_cost(q, r);
  EXPECT_NE(line_starting(text, "  sharded ", 1), "") << text;  // in both tables
  EXPECT_EQ(line_starting(text, "  leader ", 1), "") << text;   // only in the one-sync table
}

TEST(IslandsCost, WithoutIslandsTheReportIsUnchanged) {
  CostQuery q;
  q.strategy = "diloco";
  q.latency = 0.03;
  q.workers = 4;
  q.step_seconds = 2;
  // The text `atoll cost --strategy=diloco --latency=30ms --workers=4 --step-time=2` printed before islands
  // (with the table of algorithms added since).
  EXPECT_EQ(format_cost(q, estimate_cost(q)),
            "inputs: 7B parameters x 2 bytes/element, 4 workers, 100 Mbit/s per link, latency 30 ms, ring "
            "all-reduce, strategy diloco (H=500), 1000 steps x 2 s compute\n"
            "one copy through one link: 1120 s (18.7 min), 14 GB\n"
            "one sync (ring all-reduce, N=4): 1680 s (28 min), payload 14 GB, sent per worker 21 GB\n"
            "the same sync under each algorithm (the relay's link: 100 Mbit/s each way):\n"
            "  algorithm     one sync         sent per worker  received per worker\n"
            "  ring, chosen  1680 s (28 min)  21 GB            21 GB\n"
            "  tree          1680 s (28 min)  21 GB            21 GB\n"
            "  ps (relay)    8960 s (2.49 h)  14 GB            14 GB\n"
            "syncs in run: 2\n"
            "sent per worker in run: 42 GB\n"
            "communication time in run: 3360 s (56 min)\n"
            "total time: 5360 s (89.3 min) = compute 2000 s (33.3 min) + blocking communication 3360 s (56 min)\n"
            "compute utilisation: 37.3%\n");
  EXPECT_TRUE(estimate_cost(q).exchanges.empty());
}

TEST(IslandsCost, BadIslandValuesAreRejectedWithWhatIsAllowed) {
  auto problem = [](auto edit) {
    CostQuery q = seven_billion_on_eight_islands_of_eight();
    edit(q);
    return invalid_argument_message([&] { estimate_cost(q); });
  };
  EXPECT_NE(problem([](CostQuery& q) { q.islands = -1; }).find("islands must be in 0..1000000"), std::string::npos);
  EXPECT_NE(problem([](CostQuery& q) { q.devices = 0; }).find("devices must be in 1..1000000"), std::string::npos);
  EXPECT_NE(problem([](CostQuery& q) { q.islands = 0; }).find("devices per island needs islands >= 1"),
            std::string::npos);
  EXPECT_NE(problem([](CostQuery& q) { q.exchange = "ring"; }).find("expected one of flat|leader|sharded|all"),
            std::string::npos);
  EXPECT_NE(problem([](CostQuery& q) { q.intra_bandwidth = 0; }).find("intra-island bandwidth must be > 0"),
            std::string::npos);
  EXPECT_NE(problem([](CostQuery& q) { q.intra_latency = -1; }).find("intra-island latency must be >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace atl
