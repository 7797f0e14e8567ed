// Links that upload slower than they download, and the relay (ps): the
// network model's formulas, the [network] keys that set them, the ledger's
// bytes and `atoll cost`'s comparison of ring, tree and relay. Expected
// values are worked out by hand in the comments.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/cost.h"
#include "atoll/net.h"
#include "test_util.h"

namespace atl {
namespace {

using testing::invalid_argument_message;

constexpr double kS = 1e6, kAlpha = 0.01;

NetworkModel model(int64_t n, double up, double down, CollectiveAlgo algo, double server = 0) {
  return NetworkModel(std::vector<Link>(static_cast<std::size_t>(n), Link{up, kAlpha, down}), algo, server, 0.0, 1);
}

TEST(AsymmetricLinks, ARingIsBoundByTheSlowestUplinkOrDownlinkWhicheverIsSlower) {
  // Ring all-reduce, N = 4: 2(N-1) alpha + 2(N-1)/N S / beta = 0.06 + 1.5e6 / beta.
  // Up 1e6, down 5e6: beta = 1e6 (the uplink) -> 1.56 s, as a symmetric 1e6 link.
  const NetworkModel up_bound = model(4, 1e6, 5e6, CollectiveAlgo::Ring);
  EXPECT_NEAR(up_bound.collective_seconds(CommOp::AllReduce, kS, 0), 1.56, 1e-12);
  EXPECT_DOUBLE_EQ(up_bound.collective_seconds(CommOp::AllReduce, kS, 0),
                   model(4, 1e6, 0, CollectiveAlgo::Ring).collective_seconds(CommOp::AllReduce, kS, 0));
  // Up 5e6, down 1e6: the downlink binds instead -> the same 1.56 s.
  EXPECT_NEAR(model(4, 5e6, 1e6, CollectiveAlgo::Ring).collective_seconds(CommOp::AllReduce, kS, 0), 1.56, 1e-12);
  // Symmetric 5e6: 0.06 + 0.3 = 0.36 s.
  EXPECT_NEAR(model(4, 5e6, 0, CollectiveAlgo::Ring).collective_seconds(CommOp::AllReduce, kS, 0), 0.36, 1e-12);
  // Ring all-gather: (N-1) alpha + (N-1) S / beta = 0.03 + 3 = 3.03 s at beta = 1e6.
  EXPECT_NEAR(up_bound.collective_seconds(CommOp::AllGather, kS, 0), 3.03, 1e-12);
  // Tree (recursive doubling) all-gather: lg(N) alpha + (N-1) S / beta = 0.02 + 3 = 3.02 s.
  EXPECT_NEAR(model(4, 1e6, 5e6, CollectiveAlgo::Tree).collective_seconds(CommOp::AllGather, kS, 0), 3.02, 1e-12);
}

TEST(AsymmetricLinks, OneSlowUplinkAmongFastOnesSetsTheRingsRate) {
  std::vector<Link> links(4, Link{5e6, kAlpha, 5e6});
  links[2].bandwidth = 1e6;  // rank 2 uploads at 1e6, downloads at 5e6
  const NetworkModel net(links, CollectiveAlgo::Ring, 0, 0, 1);
  EXPECT_NEAR(net.collective_seconds(CommOp::AllReduce, kS, 0), 1.56, 1e-12);
  // Ranks 0 and 1 alone exchange at their own 5e6: alpha + S / 5e6 = 0.21 s.
  EXPECT_NEAR(net.op_seconds(CommOp::Exchange, kS, {0, 1}, 0), 0.21, 1e-12);
}

TEST(AsymmetricLinks, TheRelayTakesEachPayloadUpOnceAndSendsTheResultDown) {
  // Relay all-reduce, N = 4, up 1e6, down 5e6, relay 1e8 each way:
  //   2 alpha + max(S/up, N S/relay) + max(S/down, N S/relay)
  //   = 0.02 + max(1, 0.04) + max(0.2, 0.04) = 1.22 s.
  const NetworkModel fast_relay = model(4, 1e6, 5e6, CollectiveAlgo::ParameterServer, 1e8);
  EXPECT_NEAR(fast_relay.collective_seconds(CommOp::AllReduce, kS, 0), 1.22, 1e-12);
  // Relay at 2e6: 0.02 + max(1, 2) + max(0.2, 2) = 4.02 s: its link binds.
  EXPECT_NEAR(model(4, 1e6, 5e6, CollectiveAlgo::ParameterServer, 2e6).collective_seconds(CommOp::AllReduce, kS, 0),
              4.02, 1e-12);
  // All-gather through the relay: each uploads S once, downloads the 3 others':
  //   0.02 + max(S/up = 1, 4 S/relay = 0.04) + max(3 S/down = 0.6, 12 S/relay = 0.12) = 1.62 s,
  // where a ring all-gather needs 0.03 + 3 S / 1e6 = 3.03 s: the relay moves the
  // (N-1) copies onto the downlinks.
  EXPECT_NEAR(fast_relay.collective_seconds(CommOp::AllGather, kS, 0), 1.62, 1e-12);
  // A symmetric relay-less link (up = down = 1e6): 0.02 + 1 + 3 = 4.02 s.
  EXPECT_NEAR(model(4, 1e6, 0, CollectiveAlgo::ParameterServer, 1e8).collective_seconds(CommOp::AllGather, kS, 0), 4.02,
              1e-12);
}

TEST(AsymmetricLinks, AnAllGatherThroughTheRelaySendsThePayloadOnceAndReceivesTheOthers) {
  const ByteCount relay = bytes_for(CommOp::AllGather, CollectiveAlgo::ParameterServer, kS, 8, false);
  EXPECT_DOUBLE_EQ(relay.sent, kS);
  EXPECT_DOUBLE_EQ(relay.received, 7 * kS);
  for (CollectiveAlgo algo : {CollectiveAlgo::Ring, CollectiveAlgo::Tree}) {
    const ByteCount peer = bytes_for(CommOp::AllGather, algo, kS, 8, false);
    EXPECT_DOUBLE_EQ(peer.sent, 7 * kS) << to_string(algo);
    EXPECT_DOUBLE_EQ(peer.received, 7 * kS) << to_string(algo);
  }
  EXPECT_EQ(parse_algorithm("relay"), CollectiveAlgo::ParameterServer);
}

TEST(AsymmetricLinks, IslandsSendAnAllGathersPayloadOnceThroughTheRelay) {
  const NetworkModel wan = model(3, 1e6, 5e6, CollectiveAlgo::ParameterServer, 1e8);
  const Link intra{1e9, 0};
  // 3 islands of 2 devices; each island's payload is 6 bytes, the others' 12.
  for (IslandExchange ex : {IslandExchange::Flat, IslandExchange::Leader, IslandExchange::Sharded}) {
    const OpCharge c = IslandNetwork(wan, intra, 2, ex).charge(CommOp::AllGather, 6, 6, 12, 0, false, {}, 0);
    const double once = ex == IslandExchange::Sharded ? 3 : 6;  // sharded: the device's half
    EXPECT_DOUBLE_EQ(c.sent, once) << to_string(ex);
  }
}

TEST(AsymmetricLinks, DownloadKeysSetEveryLinkThenEachWorkerAndDefaultToTheUpload) {
  NetworkConfig cfg;
  cfg.bandwidth = "110Mbit/s";                                                     // 13.75e6 B/s up
  EXPECT_DOUBLE_EQ(NetworkModel::from_config(cfg, 3, 1).link(1).down(), 13.75e6);  // symmetric by default
  cfg.download_bandwidth = "500Mbit/s";                                            // 62.5e6 B/s
  cfg.worker_bandwidth = ",8Mbit/s";
  cfg.worker_download_bandwidth = ",,80Mbit/s";
  const NetworkModel net = NetworkModel::from_config(cfg, 3, 1);
  EXPECT_DOUBLE_EQ(net.link(0).bandwidth, 13.75e6);
  EXPECT_DOUBLE_EQ(net.link(0).down(), 62.5e6);
  EXPECT_DOUBLE_EQ(net.link(1).bandwidth, 1e6);  // its own upload, the common download
  EXPECT_DOUBLE_EQ(net.link(1).down(), 62.5e6);
  EXPECT_DOUBLE_EQ(net.link(2).down(), 10e6);
}

TEST(AsymmetricLinks, BadDownloadValuesAreRefusedNamingTheKey) {
  NetworkConfig cfg;
  cfg.download_bandwidth = "fast";
  EXPECT_NE(invalid_argument_message([&] { NetworkModel::from_config(cfg, 2, 1); }).find("network.download_bandwidth"),
            std::string::npos);
  cfg.download_bandwidth = "";
  cfg.worker_download_bandwidth = "1Gbit/s,1Gbit/s,1Gbit/s";
  EXPECT_NE(invalid_argument_message([&] {
              NetworkModel::from_config(cfg, 2, 1);
            }).find("network.worker_download_bandwidth: 3 entries for 2 workers"),
            std::string::npos);
  cfg.worker_download_bandwidth = "-5Mbit/s";
  EXPECT_NE(
      invalid_argument_message([&] { NetworkModel::from_config(cfg, 2, 1); }).find("network.worker_download_bandwidth"),
      std::string::npos);
}

TEST(AsymmetricLinks, IslandsTakeTheirOwnDownloadList) {
  Config cfg;
  cfg.strategy.workers = 4;
  cfg.islands.devices = 2;  // 2 islands of 2
  cfg.network.bandwidth = "8Mbit/s";
  cfg.network.island_download_bandwidth = "80Mbit/s";
  const NetworkModel wan = wan_network(cfg, 1);
  EXPECT_DOUBLE_EQ(wan.link(0).down(), 10e6);
  EXPECT_DOUBLE_EQ(wan.link(1).down(), 1e6);
  cfg.network.island_download_bandwidth = "1Gbit/s,1Gbit/s,1Gbit/s";
  EXPECT_NE(invalid_argument_message([&] {
              wan_network(cfg, 1);
            }).find("network.island_download_bandwidth: 3 entries for 2 islands"),
            std::string::npos);
}

TEST(AsymmetricLinks, CostComparesRingTreeAndRelayForTheSamePayload) {
  CostQuery q;
  q.params = 1e6;
  q.bytes_per_element = 1;  // S = 1e6 bytes
  q.workers = 4;
  q.bandwidth = 1e6;
  q.download = 5e6;
  q.server_bandwidth = 1e8;
  q.latency = kAlpha;
  q.strategy = "diloco";
  q.inner_steps = 10;
  q.steps = 100;
  q.algo = CollectiveAlgo::ParameterServer;
  const CostReport r = estimate_cost(q);
  ASSERT_EQ(r.algorithms.size(), 3u);
  EXPECT_EQ(r.algorithms[0].name, "ring");
  EXPECT_NEAR(r.algorithms[0].sync_seconds, 1.56, 1e-12);  // 2(3)(0.01) + 1.5 S / up
  EXPECT_EQ(r.algorithms[1].name, "tree");
  EXPECT_NEAR(r.algorithms[1].sync_seconds, 1.54, 1e-12);  // 2 lg 4 (0.01) + 1.5
  EXPECT_EQ(r.algorithms[2].name, "ps");
  EXPECT_NEAR(r.algorithms[2].sync_seconds, 1.22, 1e-12);  // as the relay test above
  EXPECT_TRUE(r.algorithms[2].chosen);
  EXPECT_DOUBLE_EQ(r.sync_seconds, r.algorithms[2].sync_seconds);
  EXPECT_DOUBLE_EQ(r.sync_bytes_sent, kS);
  const std::string text = format_cost(q, r);
  EXPECT_NE(text.find("8 Mbit/s up / 40 Mbit/s down"), std::string::npos) << text;
  EXPECT_NE(text.find("ps (relay), chosen"), std::string::npos) << text;
  q.download = -1;
  EXPECT_NE(invalid_argument_message([&] { estimate_cost(q); }).find("download bandwidth"), std::string::npos);
}

}  // namespace
}  // namespace atl
