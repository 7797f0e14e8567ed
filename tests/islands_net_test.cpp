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

}  // namespace
}  // namespace atl
