// Islands' two communicators per rank (N = I x D; rank r is device d = r % D
// of island i = r / D): the island group (ranks iD..iD+D-1, as its rank d)
// and the cross group (ranks d, D+d, ..., as its rank i). The same checks run
// on the in-process backend, as the simulator arranges it (I groups of D and
// D groups of I, all in use at once), and on Gloo's subgroups.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "atoll/comm.h"
#include "atoll/dist.h"
#include "atoll/launch.h"
#include "atoll/net.h"
#include "comm/gloo_group.h"
#include "comm_checks.h"
#include "test_util.h"

namespace atl {
namespace {

using namespace std::chrono_literals;
using namespace comm_checks;

struct Shape {
  int64_t islands;  // I
  int64_t devices;  // D
  int64_t world() const { return islands * devices; }
};

// "2x2" in gtest's messages instead of the struct's bytes.
void PrintTo(const Shape& s, std::ostream* os) { *os << s.islands << "x" << s.devices; }

std::string shape_name(const ::testing::TestParamInfo<Shape>& info) {
  return std::to_string(info.param.islands) + "x" + std::to_string(info.param.devices);
}

// Every rank's island and cross communicator, called with its world rank.
using IslandFn = std::function<void(int64_t r, Communicator& island, Communicator& cross)>;

// The in-process arrangement: N threads over I island groups and D cross
// groups; a timeout aborts every group.
void run_in_process_islands(Shape s, const IslandFn& fn) {
  std::vector<std::shared_ptr<InProcessGroup>> islands, crosses;
  for (int64_t i = 0; i < s.islands; ++i) islands.push_back(make_group(s.devices));
  for (int64_t d = 0; d < s.devices; ++d) crosses.push_back(make_group(s.islands));
  run_on_threads(
      s.world(),
      [&](int64_t r) {
        fn(r, islands[r / s.devices]->rank(r % s.devices), crosses[r % s.devices]->rank(r / s.devices));
      },
      60s,
      [&] {
        for (auto& g : islands) g->abort("test timed out");
        for (auto& g : crosses) g->abort("test timed out");
      });
}

// The Gloo arrangement: gloo_threads_group's subgroups, each rank on its thread.
void run_gloo_islands(std::vector<std::unique_ptr<DistGroup>>& groups, const IslandFn& fn) {
  run_gloo_groups(groups, [&](DistGroup& g) {
    if (g.island_comm() == nullptr || g.cross_comm() == nullptr)
      throw std::runtime_error("rank " + std::to_string(g.rank()) + " has no island or cross communicator");
    fn(g.rank(), *g.island_comm(), *g.cross_comm());
  });
}

// Each rank's group ranks and sizes, then every op in the island group and
// then in the cross group, for payloads up to 2^16 (the flat group's suite
// covers 2^20; here it would only multiply the run time by the groups).
void check_island_then_cross(Shape s, int64_t r, Communicator& island, Communicator& cross) {
  EXPECT_EQ(island.rank(), r % s.devices) << "rank " << r;
  EXPECT_EQ(island.size(), s.devices) << "rank " << r;
  EXPECT_EQ(cross.rank(), r / s.devices) << "rank " << r;
  EXPECT_EQ(cross.size(), s.islands) << "rank " << r;
  for (int64_t p : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1} << 16}) {
    SCOPED_TRACE("payload " + std::to_string(p));
    const at::Tensor i = iota(p, at::kInt), fi = iota(p, at::kFloat);
    check_all_ops(island, s.devices, p, i, fi);
    check_all_ops(cross, s.islands, p, i, fi);
  }
}

// 1x2: a cross group of one rank (Gloo groups of size 1 must work too).
const auto kShapes = ::testing::Values(Shape{2, 2}, Shape{3, 2}, Shape{2, 3}, Shape{1, 2});

class IslandConformance : public ::testing::TestWithParam<Shape> {};

TEST_P(IslandConformance, InProcessIslandAndCrossGroupsGiveExactRankValuedResults) {
  const Shape s = GetParam();
  run_in_process_islands(
      s, [s](int64_t r, Communicator& island, Communicator& cross) { check_island_then_cross(s, r, island, cross); });
}

TEST_P(IslandConformance, GlooIslandAndCrossGroupsGiveExactRankValuedResults) {
  const Shape s = GetParam();
  auto groups = gloo_threads_group(s.world(), 30, CollectiveAlgo::Ring, s.devices);
  run_gloo_islands(groups, [s](int64_t r, Communicator& island, Communicator& cross) {
    check_island_then_cross(s, r, island, cross);
  });
}

INSTANTIATE_TEST_SUITE_P(Shapes, IslandConformance, kShapes, shape_name);

// ---------------------------------------------------------------------------
// Gloo subgroups: membership, interleaving, equality with the simulator.

TEST(GlooIslands, IslandAndCrossGroupsHoldTheRanksOfTheirIslandAndDeviceIndex) {
  for (Shape s : {Shape{3, 2}, Shape{2, 3}}) {
    SCOPED_TRACE(std::to_string(s.islands) + "x" + std::to_string(s.devices));
    auto groups = gloo_threads_group(s.world(), 30, CollectiveAlgo::Ring, s.devices);
    run_gloo_islands(groups, [s](int64_t r, Communicator& island, Communicator& cross) {
      const int64_t i = r / s.devices, d = r % s.devices;
      std::vector<at::Tensor> members;
      island.all_gather(at::full({1}, r, at::kLong), members, "who");
      ASSERT_EQ(static_cast<int64_t>(members.size()), s.devices);
      for (int64_t k = 0; k < s.devices; ++k)
        EXPECT_EQ(members[k].item<int64_t>(), i * s.devices + k) << "rank " << r << " island member " << k;
      cross.all_gather(at::full({1}, r, at::kLong), members, "who");
      ASSERT_EQ(static_cast<int64_t>(members.size()), s.islands);
      for (int64_t k = 0; k < s.islands; ++k)
        EXPECT_EQ(members[k].item<int64_t>(), k * s.devices + d) << "rank " << r << " cross member " << k;
    });
  }
}

TEST(GlooIslands, IslandAndCrossOpsInterleaveFor20RoundsWithExactValues) {
  for (Shape s : {Shape{2, 2}, Shape{3, 2}}) {
    SCOPED_TRACE(std::to_string(s.islands) + "x" + std::to_string(s.devices));
    const int64_t D = s.devices, n_islands = s.islands;
    auto groups = gloo_threads_group(s.world(), 30, CollectiveAlgo::Ring, D);
    run_gloo_islands(groups, [D, n_islands](int64_t r, Communicator& island, Communicator& cross) {
      const int64_t i = r / D, d = r % D;
      for (int64_t k = 0; k < 20; ++k) {
        // Island sum of (r + k): ranks iD..iD+D-1.
        at::Tensor a = at::full({257}, r + k, at::kLong);
        island.all_reduce(a, ReduceOp::Sum, "island");
        EXPECT_TRUE(at::equal(a, at::full({257}, D * i * D + D * (D - 1) / 2 + D * k, at::kLong)))
            << "rank " << r << " round " << k;
        // Cross sum of (r + k): ranks d, D+d, ..., while an island
        // all-reduce is still in flight on the other group.
        at::Tensor pending = at::full({33}, 2 * r, at::kLong);
        Work w = island.all_reduce_async(pending, ReduceOp::Sum, "island-async");
        at::Tensor c = at::full({129}, r + k, at::kLong);
        cross.all_reduce(c, ReduceOp::Sum, "cross");
        EXPECT_TRUE(at::equal(
            c, at::full({129}, D * n_islands * (n_islands - 1) / 2 + n_islands * d + n_islands * k, at::kLong)))
            << "rank " << r << " round " << k;
        w.wait();
        EXPECT_TRUE(at::equal(pending, at::full({33}, 2 * (D * i * D + D * (D - 1) / 2), at::kLong)))
            << "rank " << r << " round " << k;
        // Island broadcast from device k % D: that rank's world rank.
        at::Tensor b = at::full({65}, 1000 * r + k, at::kLong);
        island.broadcast(b, k % D, "island-bcast");
        EXPECT_TRUE(at::equal(b, at::full({65}, 1000 * (i * D + k % D) + k, at::kLong)))
            << "rank " << r << " round " << k;
      }
    });
  }
}

TEST(GlooIslands, TwoByTwoCrossFloatMeanIsBitwiseTheInProcessGroupsMean) {
  // Cross groups of two: a + b is the same in either order, so the real
  // cross mean equals the simulated one bitwise (as the flat group's N = 2).
  const Shape s{2, 2};
  std::vector<at::Tensor> x, ours(s.world()), theirs(s.world());
  for (int64_t r = 0; r < s.world(); ++r) x.push_back(at::randn({4099}, at::kFloat));
  auto gloo = gloo_threads_group(s.world(), 30, CollectiveAlgo::Ring, s.devices);
  run_gloo_islands(gloo, [&](int64_t r, Communicator&, Communicator& cross) {
    ours[r] = x[r].clone();
    cross.all_reduce(ours[r], ReduceOp::Mean, "m");
  });
  run_in_process_islands(s, [&](int64_t r, Communicator&, Communicator& cross) {
    theirs[r] = x[r].clone();
    cross.all_reduce(theirs[r], ReduceOp::Mean, "m");
  });
  for (int64_t r = 0; r < s.world(); ++r) {
    EXPECT_TRUE(at::equal(ours[r], theirs[r])) << "rank " << r;
    // Not trivially equal: each cross group averaged its own two ranks.
    EXPECT_TRUE(at::equal(ours[r], (x[r % 2] + x[2 + r % 2]) / 2)) << "rank " << r;
  }
}

TEST(GlooIslands, EachGroupsOpsAreInItsOwnLedgerAndAllAreMeasured) {
  const Shape s{3, 2};
  auto groups = gloo_threads_group(s.world(), 30, CollectiveAlgo::Ring, s.devices);
  run_gloo_islands(groups, [](int64_t, Communicator& island, Communicator& cross) {
    at::Tensor t = at::ones({1000}, at::kFloat);
    island.all_reduce(t, ReduceOp::Sum, "island");
    cross.all_reduce(t, ReduceOp::Sum, "cross");
    cross.all_reduce(t, ReduceOp::Sum, "cross");
  });
  const double bytes = 1000 * 4;
  for (auto& g : groups) {
    EXPECT_EQ(g->comm().ledger().ops(), 0) << "rank " << g->rank();
    const auto& island = g->island_comm()->ledger();
    const auto& cross = g->cross_comm()->ledger();
    ASSERT_EQ(island.ops(), 1) << "rank " << g->rank();
    ASSERT_EQ(cross.ops(), 2) << "rank " << g->rank();
    EXPECT_EQ(island.entries()[0].tag, "island");
    EXPECT_EQ(cross.entries()[0].tag, "cross");
    // Bytes under each group's own size: D = 2 for the island, I = 3 across.
    EXPECT_DOUBLE_EQ(island.total_sent(), bytes_for(CommOp::AllReduce, CollectiveAlgo::Ring, bytes, 2, false).sent);
    EXPECT_DOUBLE_EQ(cross.total_sent(), 2 * bytes_for(CommOp::AllReduce, CollectiveAlgo::Ring, bytes, 3, false).sent);
    EXPECT_GT(g->measured_comm_seconds(), 0.0) << "rank " << g->rank();
  }
  // finish() drains all three groups and meets on the world group.
  run_gloo_groups(groups, [](DistGroup& g) { g.finish(); });
}

TEST(GlooIslands, WithoutIslandsBothSubgroupsAreNull) {
  auto groups = gloo_threads_group(2, 10, CollectiveAlgo::Ring, 1);
  for (auto& g : groups) {
    EXPECT_EQ(g->island_comm(), nullptr) << "rank " << g->rank();
    EXPECT_EQ(g->cross_comm(), nullptr) << "rank " << g->rank();
  }
}

// ---------------------------------------------------------------------------
// Errors

TEST(GlooIslands, IslandDevicesThatDoNotDivideTheWorldSizeAreRejectedNamingBoth) {
  for (int64_t devices : {int64_t{3}, int64_t{0}, int64_t{-2}}) {
    SCOPED_TRACE("islands.devices = " + std::to_string(devices));
    const std::string want = "islands.devices = " + std::to_string(devices);
    const std::string threads =
        testing::invalid_argument_message([&] { gloo_threads_group(4, 10, CollectiveAlgo::Ring, devices); });
    EXPECT_NE(threads.find(want), std::string::npos) << threads;
    EXPECT_NE(threads.find("world size 4"), std::string::npos) << threads;

    // Refused before any connection: rank 0 would otherwise host the store
    // and wait the whole timeout for rank 1.
    DistOptions opts;
    opts.rank = 0;
    opts.world_size = 4;
    opts.master_port = pick_free_port("127.0.0.1");
    opts.timeout_s = 30;
    const auto start = std::chrono::steady_clock::now();
    const std::string real =
        testing::invalid_argument_message([&] { connect_gloo(opts, CollectiveAlgo::Ring, "", devices); });
    EXPECT_NE(real.find(want), std::string::npos) << real;
    EXPECT_NE(real.find("world size 4"), std::string::npos) << real;
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  }
}

TEST(GlooIslands, ARankWhoseIslandPeerNeverJoinsFailsToConnectNamingTheIslandGroup) {
  // Rank 1 connects without islands, so rank 0's island group (ranks 0..1)
  // never completes: rank 0 fails after its 2 s timeout naming that group.
  DistOptions base;
  base.world_size = 2;
  base.master_port = pick_free_port("127.0.0.1");
  base.timeout_s = 2;
  base.heartbeat_s = 0.5;  // at most a third of the timeout
  std::unique_ptr<DistGroup> rank1;
  std::string rank0_error = "(no error)";
  const auto start = std::chrono::steady_clock::now();
  run_on_threads(
      2,
      [&](int64_t r) {
        DistOptions o = base;
        o.rank = r;
        if (r == 1) {
          rank1 = connect_gloo(o, CollectiveAlgo::Ring, "", 1);
          return;
        }
        try {
          connect_gloo(o, CollectiveAlgo::Ring, "", 2);
        } catch (const std::runtime_error& e) {
          rank0_error = e.what();
        }
      },
      60s);
  EXPECT_NE(rank0_error.find("rank 0 could not connect island 0's Gloo group (ranks 0..1, as its rank 0)"),
            std::string::npos)
      << rank0_error;
  EXPECT_NE(rank0_error.find("islands.devices = 2"), std::string::npos) << rank0_error;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

TEST(GlooIslands, ARankWaitingForAnAbsentIslandPeerFailsAfterTheTimeoutNamingItsGroup) {
  auto groups = gloo_threads_group(4, 2, CollectiveAlgo::Ring, 2);
  at::Tensor t = at::ones({10});
  const auto start = std::chrono::steady_clock::now();
  auto rank2 = spawn([&] { groups[2]->island_comm()->all_reduce(t, ReduceOp::Sum, "lonely"); });
  ASSERT_EQ(rank2.wait_for(30s), std::future_status::ready) << "rank 2 hung past its 2 s timeout";
  try {
    rank2.get();
    FAIL() << "island all_reduce without its peer returned";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce on rank 2 (device 0 in island 1's group) failed"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

}  // namespace
}  // namespace atl
