// Tests for the network model, virtual clock and cost estimate (src/net).
// Expected values are worked out by hand in the comments.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/cost.h"
#include "atoll/net.h"
#include "test_util.h"

namespace atl {
namespace {

using testing::invalid_argument_message;

NetworkModel uniform_model(int64_t n, double bandwidth, double latency, CollectiveAlgo algo,
                           double server_bandwidth = 0) {
  return NetworkModel(std::vector<Link>(static_cast<std::size_t>(n), Link{bandwidth, latency}), algo, server_bandwidth,
                      0.0, 1);
}

// ---------------------------------------------------------------- parsing

TEST(NetParse, BandwidthAcceptsBitAndByteUnitsWithDecimalPrefixes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Mbit/s"), 12.5e6);  // 1e8 bits / 8
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Gbit/s"), 125e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GB/s"), 25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("10 MB/s"), 10e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1e9"), 1e9);  // bare number: bytes/s
  EXPECT_DOUBLE_EQ(parse_bandwidth("2.5"), 2.5);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8bit/s"), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8bps"), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8b/s"), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3B/s"), 3.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3Bps"), 3.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8kbit/s"), 1e3);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8Kbit/s"), 1e3);
  EXPECT_DOUBLE_EQ(parse_bandwidth("2kB/s"), 2e3);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8Mbps"), 1e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("4MBps"), 4e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8Tbit/s"), 1e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1TB/s"), 1e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("2.5 Gbit/s"), 312.5e6);  // 2.5e9 / 8
  EXPECT_DOUBLE_EQ(parse_bandwidth("1e2Mbit/s"), 12.5e6);
}

TEST(NetParse, BandwidthRejectsWordsNegativesZeroAndUnknownUnits) {
  for (const char* bad : {"fast", "-1Mbit/s", "10 parsecs", "0", "0Mbit/s", "", "Mbit/s", "1mbit/s", "1Gbit", "0x10",
                          "inf", "nan", "1Gbit/s x"}) {
    const std::string msg = invalid_argument_message([&] { parse_bandwidth(bad); });
    EXPECT_NE(msg, "") << "accepted '" << bad << "'";
    EXPECT_NE(msg.find("100Mbit/s, 1Gbit/s, 25GB/s"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
  }
}

TEST(NetParse, DurationAcceptsEveryUnitAndBareSeconds) {
  EXPECT_DOUBLE_EQ(parse_duration("30ms"), 0.03);
  EXPECT_DOUBLE_EQ(parse_duration("0.5s"), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration("250us"), 250e-6);
  EXPECT_DOUBLE_EQ(parse_duration("250\xC2\xB5s"), 250e-6);  // µs (micro sign)
  EXPECT_DOUBLE_EQ(parse_duration("250\xCE\xBCs"), 250e-6);  // μs (Greek mu)
  EXPECT_DOUBLE_EQ(parse_duration("40ns"), 40e-9);
  EXPECT_DOUBLE_EQ(parse_duration("2min"), 120.0);
  EXPECT_DOUBLE_EQ(parse_duration("0"), 0.0);
  EXPECT_DOUBLE_EQ(parse_duration("1.5"), 1.5);
  EXPECT_DOUBLE_EQ(parse_duration("30 ms"), 0.03);
  EXPECT_DOUBLE_EQ(parse_duration("0ms"), 0.0);
}

TEST(NetParse, DurationRejectsNegativesWordsAndUnknownUnits) {
  for (const char* bad : {"-1ms", "soon", "10 parsecs", "", "5h", "1MS"}) {
    const std::string msg = invalid_argument_message([&] { parse_duration(bad); });
    EXPECT_NE(msg, "") << "accepted '" << bad << "'";
    EXPECT_NE(msg.find("duration"), std::string::npos) << msg;
  }
}

TEST(NetParse, NumberListKeepsEmptyEntriesAsFallbackAndRejectsWords) {
  EXPECT_TRUE(parse_number_list("", 7).empty());
  EXPECT_EQ(parse_number_list("1,,0.5", 7), (std::vector<double>{1, 7, 0.5}));
  EXPECT_EQ(parse_number_list(" 2 , 3 ", 0), (std::vector<double>{2, 3}));
  EXPECT_EQ(parse_number_list(",", 9), (std::vector<double>{9, 9}));
  EXPECT_EQ(parse_number_list("1e3", 0), (std::vector<double>{1000}));
  EXPECT_THROW(parse_number_list("1,x,2", 0), std::invalid_argument);
  EXPECT_THROW(parse_number_list("1.5s", 0), std::invalid_argument);
}

TEST(NetParse, AlgorithmNamesRoundTripAndUnknownNamesListTheAllowedOnes) {
  EXPECT_EQ(parse_algorithm("ring"), CollectiveAlgo::Ring);
  EXPECT_EQ(parse_algorithm("tree"), CollectiveAlgo::Tree);
  EXPECT_EQ(parse_algorithm("ps"), CollectiveAlgo::ParameterServer);
  EXPECT_EQ(parse_algorithm("parameter-server"), CollectiveAlgo::ParameterServer);
  for (auto a : {CollectiveAlgo::Ring, CollectiveAlgo::Tree, CollectiveAlgo::ParameterServer}) {
    EXPECT_EQ(parse_algorithm(to_string(a)), a);
  }
  const std::string msg = invalid_argument_message([] { parse_algorithm("mesh"); });
  EXPECT_NE(msg.find("ring"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tree"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ps"), std::string::npos) << msg;
}

TEST(NetParse, EveryCommOpHasADistinctName) {
  std::set<std::string> names;
  for (auto op : {CommOp::AllReduce, CommOp::AllGather, CommOp::Broadcast, CommOp::Barrier, CommOp::Exchange,
                  CommOp::Send, CommOp::Recv}) {
    names.insert(to_string(op));
  }
  EXPECT_EQ(names.size(), 7u);
}

// ------------------------------------------------------------ R11 example

TEST(NetR11, SevenBillionBf16At100MbitOneCopyIs1120Seconds) {
  // 7e9 params * 2 bytes = 14e9 bytes; 100 Mbit/s = 12.5e6 B/s; 14e9 / 12.5e6 = 1120 s.
  CostQuery q;  // defaults: 7e9 params, bf16, 8 workers, 12.5e6 B/s, ring, ddp
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Mbit/s"), q.bandwidth);
  const CostReport r = estimate_cost(q);
  EXPECT_EQ(r.one_copy_seconds, 1120.0);
}

TEST(NetR11, RingAllReduceOfEightWorkersIs1Point75CopiesOr1960Seconds) {
  // 2 * (8 - 1) / 8 = 1.75 copies; 1.75 * 1120 s = 1960 s (no latency).
  const NetworkModel net = uniform_model(8, 12.5e6, 0.0, CollectiveAlgo::Ring);
  const double s = 7e9 * 2;
  EXPECT_EQ(net.collective_seconds(CommOp::AllReduce, s, 0), 1960.0);
  EXPECT_EQ(bytes_for(CommOp::AllReduce, CollectiveAlgo::Ring, s, 8, false).sent, 1.75 * s);
  CostQuery q;
  EXPECT_EQ(estimate_cost(q).sync_seconds, 1960.0);
}

TEST(NetR11, ThirtyMillisecondLatencyAddsTwoTimesSevenLatenciesToRing) {
  // 2 (N - 1) alpha = 2 * 7 * 0.03 s = 0.42 s on top of 1960 s.
  const NetworkModel net = uniform_model(8, 12.5e6, 0.03, CollectiveAlgo::Ring);
  EXPECT_NEAR(net.collective_seconds(CommOp::AllReduce, 14e9, 0), 1960.0 + 2 * 7 * 0.03, 1e-9);
}

// ------------------------------------------------------- time formulas

// N = 4, S = 1e6 B, beta = 1e6 B/s (S/beta = 1 s), alpha = 0.01 s.
constexpr double kS = 1e6, kBeta = 1e6, kAlpha = 0.01;

TEST(NetTime, RingAllReduceMatchesHandComputedValue) {
  // 2 (N-1) alpha + 2 (N-1)/N S/beta = 2*3*0.01 + 2*3/4*1 = 0.06 + 1.5 = 1.56 s.
  const NetworkModel net = uniform_model(4, kBeta, kAlpha, CollectiveAlgo::Ring);
  EXPECT_NEAR(net.collective_seconds(CommOp::AllReduce, kS, 0), 1.56, 1e-12);
}

TEST(NetTime, TreeAllReduceMatchesHandComputedValue) {
  // 2 ceil(log2 4) alpha + 2 (N-1)/N S/beta = 2*2*0.01 + 1.5 = 1.54 s.
  const NetworkModel net = uniform_model(4, kBeta, kAlpha, CollectiveAlgo::Tree);
  EXPECT_NEAR(net.collective_seconds(CommOp::AllReduce, kS, 0), 1.54, 1e-12);
}

TEST(NetTime, TreeAllReduceForNonPowerOfTwoUsesCeilLog2) {
  // N = 5: ceil(log2 5) = 3: 2*3*0.01 + 2*4/5*1 = 0.06 + 1.6 = 1.66 s.
  EXPECT_NEAR(uniform_model(5, kBeta, kAlpha, CollectiveAlgo::Tree).collective_seconds(CommOp::AllReduce, kS, 0), 1.66,
              1e-12);
  // N = 3: ceil(log2 3) = 2: 2*2*0.01 + 2*2/3*1 = 0.04 + 4/3 s.
  EXPECT_NEAR(uniform_model(3, kBeta, kAlpha, CollectiveAlgo::Tree).collective_seconds(CommOp::AllReduce, kS, 0),
              0.04 + 4.0 / 3.0, 1e-12);
}

TEST(NetTime, ParameterServerAllReduceMatchesHandComputedValue) {
  // Server link = worker link (1e6 B/s): 2 alpha + 2 max(S/beta, N S/beta_server)
  //   = 0.02 + 2 * max(1, 4) = 8.02 s: the server link is the bottleneck.
  EXPECT_NEAR(
      uniform_model(4, kBeta, kAlpha, CollectiveAlgo::ParameterServer).collective_seconds(CommOp::AllReduce, kS, 0),
      8.02, 1e-12);
  // Server at 1e7 B/s: 0.02 + 2 * max(1, 4e6/1e7 = 0.4) = 2.02 s: workers' links decide.
  EXPECT_NEAR(uniform_model(4, kBeta, kAlpha, CollectiveAlgo::ParameterServer, 1e7)
                  .collective_seconds(CommOp::AllReduce, kS, 0),
              2.02, 1e-12);
}

TEST(NetTime, OtherOpsMatchHandComputedValues) {
  const NetworkModel net = uniform_model(4, kBeta, kAlpha, CollectiveAlgo::Ring);
  // all-gather: (N-1) alpha + (N-1) S/beta = 0.03 + 3 = 3.03 s.
  EXPECT_NEAR(net.collective_seconds(CommOp::AllGather, kS, 0), 3.03, 1e-12);
  // broadcast: ceil(log2 4) alpha + S/beta = 0.02 + 1 = 1.02 s.
  EXPECT_NEAR(net.collective_seconds(CommOp::Broadcast, kS, 0), 1.02, 1e-12);
  // barrier: 2 ceil(log2 4) alpha = 0.04 s, whatever the payload.
  EXPECT_NEAR(net.collective_seconds(CommOp::Barrier, kS, 0), 0.04, 1e-12);
  // exchange / send / recv between two ranks: alpha + S/beta = 1.01 s.
  for (auto op : {CommOp::Exchange, CommOp::Send, CommOp::Recv}) {
    EXPECT_NEAR(net.op_seconds(op, kS, {1, 3}, 0), 1.01, 1e-12) << to_string(op);
  }
}

TEST(NetTime, ASingleParticipantTakesZeroSecondsForEveryOp) {
  const NetworkModel one = NetworkModel({Link{kBeta, kAlpha}}, CollectiveAlgo::Ring, 0, 0.5, 3);
  const NetworkModel four = uniform_model(4, kBeta, kAlpha, CollectiveAlgo::Tree);
  for (auto op : {CommOp::AllReduce, CommOp::AllGather, CommOp::Broadcast, CommOp::Barrier, CommOp::Exchange,
                  CommOp::Send, CommOp::Recv}) {
    EXPECT_EQ(one.collective_seconds(op, kS, 5), 0.0) << to_string(op);
    EXPECT_EQ(four.op_seconds(op, kS, {2}, 5), 0.0) << to_string(op);
  }
}

TEST(NetTime, ParticipantOutsideTheWorldIsRejected) {
  const NetworkModel net = uniform_model(2, kBeta, kAlpha, CollectiveAlgo::Ring);
  EXPECT_THROW(net.op_seconds(CommOp::Send, kS, {0, 2}, 0), std::out_of_range);
  EXPECT_THROW(net.op_seconds(CommOp::Send, kS, {-1, 0}, 0), std::out_of_range);
}

// ---------------------------------------------------------------- bytes

TEST(NetBytes, EveryOpMatchesTheFormulasForOneTwoAndEightRanks) {
  const double s = 1000;
  const auto ring = CollectiveAlgo::Ring, tree = CollectiveAlgo::Tree, ps = CollectiveAlgo::ParameterServer;
  // N = 1 moves nothing, whatever the op.
  for (auto op : {CommOp::AllReduce, CommOp::AllGather, CommOp::Broadcast, CommOp::Barrier, CommOp::Exchange,
                  CommOp::Send, CommOp::Recv}) {
    for (bool root : {true, false}) {
      const ByteCount c = bytes_for(op, ring, s, 1, root);
      EXPECT_EQ(c.sent, 0.0) << to_string(op);
      EXPECT_EQ(c.received, 0.0) << to_string(op);
    }
  }
  struct Case {
    CommOp op;
    CollectiveAlgo algo;
    int64_t n;
    bool root;
    double sent, received;
  };
  const std::vector<Case> cases = {
      // all-reduce ring / tree: 2(N-1)/N S: N=2 -> 1000, N=8 -> 1750.
      {CommOp::AllReduce, ring, 2, false, 1000, 1000},
      {CommOp::AllReduce, ring, 8, false, 1750, 1750},
      {CommOp::AllReduce, tree, 2, false, 1000, 1000},
      {CommOp::AllReduce, tree, 8, false, 1750, 1750},
      // parameter server: S up, S down.
      {CommOp::AllReduce, ps, 2, false, 1000, 1000},
      {CommOp::AllReduce, ps, 8, false, 1000, 1000},
      // all-gather: (N-1) S: N=2 -> 1000, N=8 -> 7000.
      {CommOp::AllGather, ring, 2, false, 1000, 1000},
      {CommOp::AllGather, ring, 8, false, 7000, 7000},
      // broadcast: root sends S, others receive S.
      {CommOp::Broadcast, ring, 2, true, 1000, 0},
      {CommOp::Broadcast, ring, 2, false, 0, 1000},
      {CommOp::Broadcast, ring, 8, true, 1000, 0},
      {CommOp::Broadcast, ring, 8, false, 0, 1000},
      // barrier: nothing.
      {CommOp::Barrier, ring, 2, false, 0, 0},
      {CommOp::Barrier, ring, 8, true, 0, 0},
      // exchange: S each way; send: S out; recv: S in.
      {CommOp::Exchange, ring, 2, false, 1000, 1000},
      {CommOp::Exchange, ring, 8, false, 1000, 1000},
      {CommOp::Send, ring, 2, false, 1000, 0},
      {CommOp::Send, ring, 8, false, 1000, 0},
      {CommOp::Recv, ring, 2, false, 0, 1000},
      {CommOp::Recv, ring, 8, false, 0, 1000},
  };
  for (const Case& c : cases) {
    const ByteCount b = bytes_for(c.op, c.algo, s, c.n, c.root);
    EXPECT_DOUBLE_EQ(b.sent, c.sent) << to_string(c.op) << " " << to_string(c.algo) << " N=" << c.n;
    EXPECT_DOUBLE_EQ(b.received, c.received) << to_string(c.op) << " " << to_string(c.algo) << " N=" << c.n;
  }
}

// -------------------------------------------------------- heterogeneous

TEST(NetHeterogeneous, SlowestBandwidthAndLargestLatencyDecide) {
  const NetworkModel net({Link{1e6, 0.01}, Link{5e5, 0.002}, Link{2e6, 0.05}, Link{1e6, 0.0}}, CollectiveAlgo::Ring, 0,
                         0, 1);
  // All four: beta = 5e5 (rank 1), alpha = 0.05 (rank 2):
  //   2*3*0.05 + 2*3/4 * 1e6/5e5 = 0.3 + 3 = 3.3 s.
  EXPECT_NEAR(net.collective_seconds(CommOp::AllReduce, 1e6, 0), 3.3, 1e-12);
  // Ranks {0, 2, 3}: beta = 1e6, alpha = 0.05: 2*2*0.05 + 2*2/3 * 1 = 0.2 + 4/3 s.
  EXPECT_NEAR(net.op_seconds(CommOp::AllReduce, 1e6, {0, 2, 3}, 0), 0.2 + 4.0 / 3.0, 1e-12);
}

TEST(NetHeterogeneous, ExchangeBetweenTwoRanksUsesOnlyTheirLinks) {
  const NetworkModel net({Link{1e6, 0.01}, Link{5e5, 0.002}, Link{2e6, 0.05}, Link{1e6, 0.0}}, CollectiveAlgo::Ring, 0,
                         0, 1);
  // 0 <-> 3: alpha = 0.01, beta = 1e6: 0.01 + 1 = 1.01 s (rank 1's slow link is irrelevant).
  EXPECT_NEAR(net.op_seconds(CommOp::Exchange, 1e6, {0, 3}, 0), 1.01, 1e-12);
  // 2 <-> 3: alpha = 0.05, beta = 1e6: 1.05 s.
  EXPECT_NEAR(net.op_seconds(CommOp::Exchange, 1e6, {2, 3}, 0), 1.05, 1e-12);
  // 1 <-> 2: alpha = 0.05, beta = 5e5: 0.05 + 2 = 2.05 s.
  EXPECT_NEAR(net.op_seconds(CommOp::Exchange, 1e6, {1, 2}, 0), 2.05, 1e-12);
}

// --------------------------------------------------------------- jitter

TEST(NetJitter, SameSeedAndOpIndexGiveTheSameDelayWithinZeroToJitter) {
  // Zero latency and a barrier: the op's time is the jitter alone.
  const double jitter = 0.01;
  const std::vector<Link> links(4, Link{1e6, 0.0});
  const NetworkModel a(links, CollectiveAlgo::Ring, 0, jitter, 42);
  const NetworkModel b(links, CollectiveAlgo::Ring, 0, jitter, 42);
  for (uint64_t i = 0; i < 1000; ++i) {
    const double t = a.collective_seconds(CommOp::Barrier, 0, i);
    EXPECT_EQ(t, b.collective_seconds(CommOp::Barrier, 0, i));
    EXPECT_EQ(t, a.collective_seconds(CommOp::Barrier, 0, i));
    EXPECT_GE(t, 0.0);
    EXPECT_LT(t, jitter);
  }
}

TEST(NetJitter, DelayDiffersAcrossOpIndexAndSeed) {
  const std::vector<Link> links(2, Link{1e6, 0.0});
  const NetworkModel a(links, CollectiveAlgo::Ring, 0, 1.0, 42);
  const NetworkModel c(links, CollectiveAlgo::Ring, 0, 1.0, 43);
  std::set<double> seen;
  double sum = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    const double t = a.collective_seconds(CommOp::Barrier, 0, i);
    seen.insert(t);
    sum += t;
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_NEAR(sum / 100, 0.5, 0.15);  // roughly uniform on [0, 1)
  EXPECT_NE(a.collective_seconds(CommOp::Barrier, 0, 7), c.collective_seconds(CommOp::Barrier, 0, 7));
}

TEST(NetJitter, JitterAddsToTheFormulaTime) {
  // Same op index on a model with and without jitter: difference in [0, jitter).
  const std::vector<Link> links(4, Link{1e6, 0.01});
  const NetworkModel plain(links, CollectiveAlgo::Ring, 0, 0.0, 9);
  const NetworkModel jittered(links, CollectiveAlgo::Ring, 0, 0.005, 9);
  const double d =
      jittered.collective_seconds(CommOp::AllReduce, 1e6, 3) - plain.collective_seconds(CommOp::AllReduce, 1e6, 3);
  EXPECT_GE(d, 0.0);
  EXPECT_LT(d, 0.005);
}

// ---------------------------------------------------------------- clock

TEST(NetClock, StragglerScheduleGivesHandComputedTimes) {
  // A: 1 s/step; B: 1.5 s/step (speed factor 1.5); blocking all-reduce of 1 s
  // network time after each step; completion = max arrival + 1 s.
  //   step 1: A 1.0, B 1.5 -> done 2.5; A blocked 1.5, B blocked 1.0
  //   step 2: A 3.5, B 4.0 -> done 5.0; A blocked 1.5, B blocked 1.0
  //   step 3: A 6.0, B 6.5 -> done 7.5; A blocked 1.5, B blocked 1.0
  // A: now 7.5, compute 3.0, blocked 4.5; B: now 7.5, compute 4.5, blocked 3.0.
  VirtualClock a, b;
  const double expected_done[] = {2.5, 5.0, 7.5};
  for (int step = 0; step < 3; ++step) {
    a.advance_compute(1.0);
    b.advance_compute(1.0 * 1.5);
    const double done = std::max(a.now(), b.now()) + 1.0;
    EXPECT_DOUBLE_EQ(done, expected_done[step]);
    a.wait_until(done);
    b.wait_until(done);
  }
  EXPECT_DOUBLE_EQ(a.now(), 7.5);
  EXPECT_DOUBLE_EQ(a.compute_seconds(), 3.0);
  EXPECT_DOUBLE_EQ(a.blocked_seconds(), 4.5);
  EXPECT_DOUBLE_EQ(a.utilisation(), 3.0 / 7.5);
  EXPECT_DOUBLE_EQ(b.now(), 7.5);
  EXPECT_DOUBLE_EQ(b.compute_seconds(), 4.5);
  EXPECT_DOUBLE_EQ(b.blocked_seconds(), 3.0);
  EXPECT_DOUBLE_EQ(b.utilisation(), 4.5 / 7.5);
}

TEST(NetClock, NonBlockingOpOnlyChargesTheUnhiddenPart) {
  // Issued at t = 0, 1 s network time -> completes at 1.0; 0.6 s compute
  // overlaps it, so waiting blocks 0.4 s.
  VirtualClock c;
  const double done = c.now() + 1.0;
  c.advance_compute(0.6);
  c.wait_until(done);
  EXPECT_DOUBLE_EQ(c.now(), 1.0);
  EXPECT_DOUBLE_EQ(c.compute_seconds(), 0.6);
  EXPECT_NEAR(c.blocked_seconds(), 0.4, 1e-15);
}

TEST(NetClock, WaitingForThePastIsANoOpAndNegativeComputeThrows) {
  VirtualClock c;
  EXPECT_EQ(c.utilisation(), 1.0);
  c.advance_compute(2.0);
  c.wait_until(1.0);
  EXPECT_EQ(c.now(), 2.0);
  EXPECT_EQ(c.blocked_seconds(), 0.0);
  EXPECT_THROW(c.advance_compute(-0.1), std::invalid_argument);
  EXPECT_EQ(c.now(), 2.0);
}

// ---------------------------------------------------------- from_config

TEST(NetFromConfig, PerWorkerOverridesReplaceOnlyTheirEntries) {
  NetworkConfig cfg;
  cfg.bandwidth = "1Gbit/s";  // 125e6 B/s
  cfg.latency = "5ms";
  cfg.worker_bandwidth = "100Mbit/s,,10MB/s";  // rank 1 empty -> default; rank 3 unlisted
  cfg.worker_latency = "30ms";
  cfg.algorithm = "tree";
  const NetworkModel net = NetworkModel::from_config(cfg, 4, 1);
  EXPECT_EQ(net.workers(), 4);
  EXPECT_EQ(net.algorithm(), CollectiveAlgo::Tree);
  EXPECT_DOUBLE_EQ(net.link(0).bandwidth, 12.5e6);
  EXPECT_DOUBLE_EQ(net.link(1).bandwidth, 125e6);
  EXPECT_DOUBLE_EQ(net.link(2).bandwidth, 10e6);
  EXPECT_DOUBLE_EQ(net.link(3).bandwidth, 125e6);
  EXPECT_DOUBLE_EQ(net.link(0).latency, 0.03);
  for (int r = 1; r < 4; ++r) EXPECT_DOUBLE_EQ(net.link(r).latency, 0.005);
}

TEST(NetFromConfig, EmptyServerBandwidthMeansTheDefaultBandwidth) {
  NetworkConfig cfg;
  cfg.bandwidth = "8Mbit/s";  // 1e6 B/s
  cfg.algorithm = "ps";
  // Server 1e6 B/s: 2 * max(1e6/1e6, 4 * 1e6/1e6) = 8 s.
  EXPECT_NEAR(NetworkModel::from_config(cfg, 4, 1).collective_seconds(CommOp::AllReduce, 1e6, 0), 8.0, 1e-12);
  // Server 1e7 B/s: 2 * max(1, 0.4) = 2 s.
  cfg.server_bandwidth = "80Mbit/s";
  EXPECT_NEAR(NetworkModel::from_config(cfg, 4, 1).collective_seconds(CommOp::AllReduce, 1e6, 0), 2.0, 1e-12);
}

TEST(NetFromConfig, JitterIsParsedAndSeeded) {
  NetworkConfig cfg;
  cfg.jitter = "10ms";
  const NetworkModel a = NetworkModel::from_config(cfg, 2, 5);
  const NetworkModel b = NetworkModel::from_config(cfg, 2, 5);
  const double t = a.collective_seconds(CommOp::Barrier, 0, 11);
  EXPECT_EQ(t, b.collective_seconds(CommOp::Barrier, 0, 11));
  EXPECT_GE(t, 0.0);
  EXPECT_LT(t, 0.01);
}

TEST(NetFromConfig, ErrorsNameTheOffendingKey) {
  auto message = [](void (*edit)(NetworkConfig&), int64_t workers) {
    NetworkConfig cfg;
    edit(cfg);
    return invalid_argument_message([&] { NetworkModel::from_config(cfg, workers, 1); });
  };
  auto has = [](const std::string& msg, const std::string& key) { return msg.find(key) != std::string::npos; };
  EXPECT_TRUE(has(message([](NetworkConfig& c) { c.bandwidth = "fast"; }, 2), "network.bandwidth"));
  EXPECT_TRUE(has(message([](NetworkConfig& c) { c.latency = "-1ms"; }, 2), "network.latency"));
  EXPECT_TRUE(has(message([](NetworkConfig& c) { c.jitter = "lots"; }, 2), "network.jitter"));
  EXPECT_TRUE(has(message([](NetworkConfig& c) { c.algorithm = "mesh"; }, 2), "network.algorithm"));
  EXPECT_TRUE(has(message([](NetworkConfig& c) { c.server_bandwidth = "0"; }, 2), "network.server_bandwidth"));
  EXPECT_TRUE(has(message([](NetworkConfig& c) { c.worker_bandwidth = "1Gbit/s,x"; }, 2), "network.worker_bandwidth"));
  EXPECT_TRUE(has(message([](NetworkConfig& c) { c.worker_latency = ",10 parsecs"; }, 2), "network.worker_latency"));
  // More entries than workers.
  const std::string too_many = message([](NetworkConfig& c) { c.worker_bandwidth = "1Gbit/s,1Gbit/s,1Gbit/s"; }, 2);
  EXPECT_TRUE(has(too_many, "network.worker_bandwidth")) << too_many;
  EXPECT_TRUE(has(too_many, "3 entries for 2 workers")) << too_many;
  EXPECT_TRUE(has(message([](NetworkConfig& c) { c.worker_latency = "1ms,2ms,3ms"; }, 2), "network.worker_latency"));
  EXPECT_THROW(NetworkModel::from_config(NetworkConfig{}, 0, 1), std::invalid_argument);
}

// ---------------------------------------------------------------- cost

TEST(NetCost, DdpSendsFiveHundredTimesDilocoAndTwoHundredTimesSparta) {
  CostQuery ddp;  // 7e9 bf16, N = 8, 100 Mbit/s, ring, 1000 steps
  ddp.strategy = "ddp";
  CostQuery diloco = ddp;
  diloco.strategy = "diloco";
  diloco.inner_steps = 500;
  CostQuery sparta = ddp;
  sparta.strategy = "sparta";
  sparta.sparta_p = 0.005;
  const CostReport rd = estimate_cost(ddp), rl = estimate_cost(diloco), rs = estimate_cost(sparta);
  // DDP: 1000 syncs of 14e9 B; DiLoCo: floor(1000/500) = 2 syncs of 14e9 B;
  // SPARTA: 1000 syncs of 0.005 * 14e9 = 7e7 B.
  EXPECT_EQ(rd.syncs, 1000);
  EXPECT_EQ(rl.syncs, 2);
  EXPECT_EQ(rs.syncs, 1000);
  EXPECT_DOUBLE_EQ(rs.sync_payload_bytes, 7e7);
  EXPECT_DOUBLE_EQ(rd.run_bytes_sent / rl.run_bytes_sent, 500.0);
  EXPECT_NEAR(rd.run_bytes_sent / rs.run_bytes_sent, 200.0, 1e-9);
  // Per worker per sync: 1.75 * 14e9 = 24.5e9 B; DDP run: 1000 * that.
  EXPECT_DOUBLE_EQ(rd.sync_bytes_sent, 24.5e9);
  EXPECT_DOUBLE_EQ(rd.run_bytes_sent, 24.5e12);
  EXPECT_DOUBLE_EQ(rl.run_comm_seconds, 2 * 1960.0);
}

TEST(NetCost, LocalSgdCountsOnlyCompletedRoundsAndComputeSetsUtilisation) {
  CostQuery q;
  q.strategy = "localsgd";
  q.inner_steps = 300;
  q.steps = 1000;        // floor(1000 / 300) = 3 syncs
  q.step_seconds = 2.0;  // 2000 s of compute
  const CostReport r = estimate_cost(q);
  EXPECT_EQ(r.syncs, 3);
  EXPECT_DOUBLE_EQ(r.run_comm_seconds, 3 * 1960.0);
  EXPECT_DOUBLE_EQ(r.run_total_seconds, 2000.0 + 5880.0);
  EXPECT_DOUBLE_EQ(r.compute_utilisation, 2000.0 / 7880.0);
}

TEST(NetCost, NothingToDoHasFullUtilisationAndUnknownStrategiesAreListed) {
  CostQuery q;
  q.steps = 0;
  EXPECT_EQ(estimate_cost(q).compute_utilisation, 1.0);
  q.strategy = "gossip";
  const std::string msg = invalid_argument_message([&] { estimate_cost(q); });
  EXPECT_NE(msg.find("ddp|localsgd|diloco|sparta"), std::string::npos) << msg;
}

TEST(NetCost, FormattedReportShowsTheWorkedExampleFigures) {
  CostQuery q;
  q.strategy = "diloco";
  const std::string text = format_cost(q, estimate_cost(q));
  EXPECT_NE(text.find("100 Mbit/s"), std::string::npos) << text;
  EXPECT_NE(text.find("diloco (H=500)"), std::string::npos) << text;
  EXPECT_NE(text.find("one copy through one link: 1120 s (18.7 min)"), std::string::npos) << text;
  EXPECT_NE(text.find("one sync (ring all-reduce, N=8): 1960 s (32.7 min)"), std::string::npos) << text;
  EXPECT_NE(text.find("sent per worker 24.5 GB"), std::string::npos) << text;
  EXPECT_NE(text.find("syncs in run: 2"), std::string::npos) << text;
  EXPECT_NE(text.find("compute utilisation: 0.0%"), std::string::npos) << text;
}

}  // namespace
}  // namespace atl
