// Tests for the islands' cost model (src/net/islands.cpp), NetworkModel's
// op_seconds_for, and `atoll cost --islands` (src/net/cost.cpp).
// Expected values come from the closed formulas of ALGORITHMS.md 7.2's
// islands table, written out here, or are worked out by hand in comments.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/net.h"
#include "test_util.h"

namespace atl {
namespace {

using testing::invalid_argument_message;

const CommOp kAllOps[] = {CommOp::AllReduce, CommOp::AllGather, CommOp::Broadcast, CommOp::Barrier,
                          CommOp::Exchange,  CommOp::Send,      CommOp::Recv};
const IslandExchange kAllExchanges[] = {IslandExchange::Flat, IslandExchange::Leader, IslandExchange::Sharded};

NetworkModel uniform_wan(int64_t islands, double bandwidth, double latency, double jitter = 0,
                         CollectiveAlgo algo = CollectiveAlgo::Ring) {
  return NetworkModel(std::vector<Link>(static_cast<std::size_t>(islands), Link{bandwidth, latency}), algo, 0.0,
                      jitter, 7);
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
  EXPECT_NE(invalid_argument_message([&] { net.op_seconds_for(CommOp::AllReduce, 1, {0, 1, 2}, 2, 0); })
                .find("fewer than the 3 participants"),
            std::string::npos);
  EXPECT_NE(invalid_argument_message([&] { net.op_seconds_for(CommOp::AllReduce, 1, {}, 4, 0); })
                .find("need the participants"),
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
      const double want[] = {flat, leader, sharded};
      const double want_intra[] = {0.0, 2 * t_tree, 2 * ring_in};
      for (int e = 0; e < 3; ++e) {
        const IslandNetwork net(uniform_wan(islands, beta, alpha), Link{b_in, a_in}, d, kAllExchanges[e]);
        const std::string what = to_string(kAllExchanges[e]) + " I=" + std::to_string(islands) +
                                 " D=" + std::to_string(d);
        for (int64_t dev = 0; dev < d; ++dev) {
          const OpCharge c = net.charge(CommOp::AllReduce, s, s, 0, dev, false, {}, 0);
          expect_close(c.seconds, want[e], what);
          expect_close(c.intra_seconds, want_intra[e], what);
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

TEST(IslandsNet, PerDeviceBytesSumPerIslandToTheTablesWideAreaBytes) {
  const double s = 8e6;
  for (int64_t islands : {2, 3, 4}) {
    for (int64_t d : {1, 2, 4}) {
      const double i = static_cast<double>(islands), dd = static_cast<double>(d);
      // Wide-area bytes per island (each way): flat D*2(ID-1)/(ID)*S, leader
      // and sharded 2(I-1)/I*S. Inside an island, leader: (D-1)*S up the tree
      // and (D-1)*S down; sharded: D devices x 2(D-1)/D*S; flat: none.
      const double wan[] = {dd * 2 * (i * dd - 1) / (i * dd) * s, 2 * (i - 1) / i * s, 2 * (i - 1) / i * s};
      const double intra[] = {0.0, 2 * (dd - 1) * s, 2 * (dd - 1) * s};
      for (int e = 0; e < 3; ++e) {
        const IslandNetwork net(uniform_wan(islands, 1e6, 0.01), Link{1e9, 1e-5}, d, kAllExchanges[e]);
        const std::string what = to_string(kAllExchanges[e]) + " I=" + std::to_string(islands) +
                                 " D=" + std::to_string(d);
        double sent = 0, received = 0, intra_sent = 0, intra_received = 0, busiest = 0;
        for (int64_t dev = 0; dev < d; ++dev) {
          const OpCharge c = net.charge(CommOp::AllReduce, s, s, 0, dev, false, {}, 0);
          sent += c.sent;
          received += c.received;
          intra_sent += c.intra_sent;
          intra_received += c.intra_received;
          busiest = std::max(busiest, c.sent);
        }
        expect_close(sent, wan[e], what);
        expect_close(received, wan[e], what);
        expect_close(intra_sent, intra[e], what);
        expect_close(intra_received, intra[e], what);
        // Leader: all on the leader's link; flat and sharded: spread evenly over the D links.
        expect_close(busiest, kAllExchanges[e] == IslandExchange::Leader ? wan[e] : wan[e] / dd, what);
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
  const OpCharge f = IslandNetwork(wan, intra, 2, IslandExchange::Flat)
                         .charge(CommOp::AllGather, 6, 8, 12, 1, false, {}, 0);
  EXPECT_EQ(f.sent, 30.0);      // (3*2 - 1) * 6
  EXPECT_EQ(f.received, 30.0);  // 2*12 + (2-1)*6
  const OpCharge l = IslandNetwork(wan, intra, 2, IslandExchange::Leader)
                         .charge(CommOp::AllGather, 6, 8, 12, 0, false, {}, 0);
  EXPECT_EQ(l.sent, 12.0);            // (3-1) * 6
  EXPECT_EQ(l.received, 12.0);        // others
  EXPECT_EQ(l.intra_sent, 18.0);      // the leader broadcasts R to its one child
  const OpCharge sh = IslandNetwork(wan, intra, 2, IslandExchange::Sharded)
                          .charge(CommOp::AllGather, 6, 8, 12, 1, false, {}, 0);
  EXPECT_EQ(sh.sent, 6.0);            // (3-1) * 6/2
  EXPECT_EQ(sh.received, 6.0);        // 12/2
  EXPECT_EQ(sh.intra_sent, 9.0);      // (2-1)/2 * 18
}

TEST(IslandsNet, OneDevicePerIslandIsTheFlatNetworkModelBitwise) {
  // Uneven links and jitter, so that every term of the flat model is exercised.
  const std::vector<Link> links = {{3e6, 0.01}, {1e6, 0.04}, {2e6, 0.02}, {5e6, 0.03}};
  const std::vector<std::vector<int64_t>> subsets = {{}, {1, 3}, {0, 2, 3}, {2}};
  for (CollectiveAlgo algo : {CollectiveAlgo::Ring, CollectiveAlgo::Tree, CollectiveAlgo::ParameterServer}) {
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
        const double draw = jumpy.op_seconds(CommOp::Barrier, 0, {0, 1}, index) -
                            calm.op_seconds(CommOp::Barrier, 0, {0, 1}, index);
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
    const std::string msg =
        invalid_argument_message([&] { IslandNetwork(wan, Link{1e9, 0}, d, IslandExchange::Leader); });
    EXPECT_NE(msg.find("islands.devices must be >= 1"), std::string::npos) << msg;
  }
  for (double b : {0.0, -1.0, inf, nan}) {
    const std::string msg =
        invalid_argument_message([&] { IslandNetwork(wan, Link{b, 0}, 2, IslandExchange::Leader); });
    EXPECT_NE(msg.find("network.intra_bandwidth must be a finite rate > 0"), std::string::npos) << msg;
  }
  for (double l : {-1e-3, inf, nan}) {
    const std::string msg =
        invalid_argument_message([&] { IslandNetwork(wan, Link{1e9, l}, 2, IslandExchange::Leader); });
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

}  // namespace
}  // namespace atl
