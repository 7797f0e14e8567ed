// Communicator / InProcessGroup: conformance, ledger, reproducibility, abort,
// mismatch detection and simulated time.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "atoll/comm.h"
#include "atoll/dist.h"
#include "atoll/launch.h"
#include "atoll/net.h"
#include "comm/gloo_group.h"
#include "comm/gloo_rendezvous.h"
#include "comm_checks.h"
#include "test_util.h"

namespace atl {
namespace {

using namespace std::chrono_literals;
using namespace comm_checks;
using testing::invalid_argument_message;

// ---------------------------------------------------------------------------
// Conformance

class Conformance : public ::testing::TestWithParam<int64_t> {};

TEST_P(Conformance, AllOpsGiveExactRankValuedResultsForPayloads0To2Pow20) {
  const int64_t n = GetParam();
  for (int64_t p : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1} << 20}) {
    SCOPED_TRACE("payload " + std::to_string(p));
    auto group = make_group(n);
    // Read-only inputs shared by all ranks (saves allocations at 2^20).
    const at::Tensor i = iota(p, at::kInt);
    const at::Tensor fi = iota(p, at::kFloat);
    run_ranks(group, [n, p, &i, &fi](Communicator& c) { check_all_ops(c, n, p, i, fi); });
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes1To8, Conformance, ::testing::Range<int64_t>(1, 9));

// ---------------------------------------------------------------------------
// The Gloo backend: n ranks as threads of this process over one in-memory
// store, joined by real TCP connections on 127.0.0.1.

class GlooConformance : public ::testing::TestWithParam<int64_t> {};

TEST_P(GlooConformance, AllOpsGiveExactRankValuedResultsForPayloads0To2Pow20) {
  const int64_t n = GetParam();
  auto groups = gloo_threads_group(n, 30, CollectiveAlgo::Ring);
  for (int64_t p : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1} << 20}) {
    SCOPED_TRACE("payload " + std::to_string(p));
    const at::Tensor i = iota(p, at::kInt);
    const at::Tensor fi = iota(p, at::kFloat);
    run_gloo_ranks(groups, [n, p, &i, &fi](Communicator& c) { check_all_ops(c, n, p, i, fi); });
  }
}

INSTANTIATE_TEST_SUITE_P(WorldSizes1To4, GlooConformance, ::testing::Range<int64_t>(1, 5));

// One rank of GlooProcesses.* below, started in its own process by
// launch_local with torchrun's variables; skipped when run on its own.
TEST(GlooProcessRank, RunsTheConformanceChecksAsOneRankOfARealJob) {
  if (!dist_requested_by_env()) GTEST_SKIP() << "runs only as a rank started by GlooProcesses.*";
  DistOptions opts = dist_options_from_env();
  opts.timeout_s = 30;
  auto group = connect_gloo(opts, CollectiveAlgo::Ring);
  for (int64_t p : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{1} << 20}) {
    SCOPED_TRACE("payload " + std::to_string(p));
    check_all_ops(group->comm(), opts.world_size, p, iota(p, at::kInt), iota(p, at::kFloat));
  }
  group->finish();
}

TEST(GlooProcesses, ConformanceHoldsBetweenTwoRealProcessesOverATcpStore) {
  LaunchOptions opts;
  opts.nproc = 2;
  opts.grace_seconds = 2;
  opts.argv = {std::filesystem::read_symlink("/proc/self/exe").string(),
               "--gtest_filter=GlooProcessRank.RunsTheConformanceChecksAsOneRankOfARealJob"};
  std::ostringstream out, err;
  opts.out = &out;
  opts.err = &err;
  const LaunchResult r = launch_local(opts);
  EXPECT_EQ(r.exit_code, 0) << r.error << "\n" << out.str() << err.str();
  // Both ranks ran the checks (a skip would also exit 0).
  for (int k = 0; k < 2; ++k) {
    const std::string ok = "[rank " + std::to_string(k) + "] [       OK ] GlooProcessRank.";
    EXPECT_NE(out.str().find(ok), std::string::npos) << out.str();
  }
}

TEST(GlooGroup, LedgerEqualsTheInProcessGroupsForTheSameOps) {
  const int64_t n = 3, p = 1000;
  const at::Tensor i = iota(p, at::kInt), fi = iota(p, at::kFloat);
  auto gloo = gloo_threads_group(n, 30, CollectiveAlgo::Ring);
  auto local = make_group(n);
  run_gloo_ranks(gloo, [&](Communicator& c) { check_all_ops(c, n, p, i, fi); });
  run_ranks(local, [&](Communicator& c) { check_all_ops(c, n, p, i, fi); });
  for (int64_t r = 0; r < n; ++r) {
    const auto& a = gloo[r]->comm().ledger().entries();
    const auto& b = local->rank(r).ledger().entries();
    ASSERT_EQ(a.size(), b.size()) << "rank " << r;
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].op, b[k].op) << "rank " << r << " op " << k;
      EXPECT_EQ(a[k].tag, b[k].tag);
      EXPECT_EQ(a[k].sent_bytes, b[k].sent_bytes) << "rank " << r << " op " << a[k].tag;
      EXPECT_EQ(a[k].received_bytes, b[k].received_bytes) << "rank " << r << " op " << a[k].tag;
    }
  }
}

TEST(GlooGroup, TheRelayOnRankZerosHostGivesExactResultsAndTheInProcessRelaysLedger) {
  // network.algorithm = ps in a real run: rank 0 reduces (gathers) and sends
  // the result down. Every op's values are exact, and the ledger is the
  // relay's (an all-gather sends its payload once).
  const int64_t n = 3, p = 1000;
  const at::Tensor i = iota(p, at::kInt), fi = iota(p, at::kFloat);
  auto gloo = gloo_threads_group(n, 30, CollectiveAlgo::ParameterServer);
  auto local = make_group(n, CollectiveAlgo::ParameterServer);
  run_gloo_ranks(gloo, [&](Communicator& c) { check_all_ops(c, n, p, i, fi); });
  run_ranks(local, [&](Communicator& c) { check_all_ops(c, n, p, i, fi); });
  bool gathered = false;
  for (int64_t r = 0; r < n; ++r) {
    const auto& a = gloo[r]->comm().ledger().entries();
    const auto& b = local->rank(r).ledger().entries();
    ASSERT_EQ(a.size(), b.size()) << "rank " << r;
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].sent_bytes, b[k].sent_bytes) << "rank " << r << " op " << a[k].tag;
      EXPECT_EQ(a[k].received_bytes, b[k].received_bytes) << "rank " << r << " op " << a[k].tag;
      if (a[k].op == CommOp::AllGather && a[k].payload_bytes > 0) {
        EXPECT_EQ(a[k].sent_bytes, a[k].payload_bytes) << "rank " << r << " op " << a[k].tag;
        gathered = true;
      }
    }
  }
  EXPECT_TRUE(gathered) << "check_all_ops no longer all-gathers";
  // Two ranks: a + b in either order, so the relay's mean is bitwise the in-process one.
  at::Tensor x[2] = {at::randn({4099}, at::kFloat), at::randn({4099}, at::kFloat)};
  at::Tensor ours[2], theirs[2];
  auto pair = gloo_threads_group(2, 30, CollectiveAlgo::ParameterServer);
  auto local_pair = make_group(2, CollectiveAlgo::ParameterServer);
  run_gloo_ranks(pair, [&](Communicator& c) {
    ours[c.rank()] = x[c.rank()].clone();
    c.all_reduce(ours[c.rank()], ReduceOp::Mean, "m");
  });
  run_ranks(local_pair, [&](Communicator& c) {
    theirs[c.rank()] = x[c.rank()].clone();
    c.all_reduce(theirs[c.rank()], ReduceOp::Mean, "m");
  });
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(at::equal(ours[r], theirs[r])) << "rank " << r;
}

TEST(GlooGroup, TwoRankFloatMeanIsBitwiseTheInProcessGroupsMean) {
  // Two operands: a + b is the same in any order, so N = 2 real runs can
  // equal simulated ones bitwise (for N > 2 Gloo's ring order differs).
  at::Tensor x[2] = {at::randn({4099}, at::kFloat), at::randn({4099}, at::kFloat)};
  at::Tensor ours[2], theirs[2];
  auto gloo = gloo_threads_group(2, 30, CollectiveAlgo::Ring);
  auto local = make_group(2);
  run_gloo_ranks(gloo, [&](Communicator& c) {
    ours[c.rank()] = x[c.rank()].clone();
    c.all_reduce(ours[c.rank()], ReduceOp::Mean, "m");
  });
  run_ranks(local, [&](Communicator& c) {
    theirs[c.rank()] = x[c.rank()].clone();
    c.all_reduce(theirs[c.rank()], ReduceOp::Mean, "m");
  });
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(at::equal(ours[r], theirs[r])) << "rank " << r;
}

TEST(GlooGroup, AsyncOpsReturnBeforeThePeerJoinsAndDeliverAtWait) {
  // Rank 1 posts only after rank 0's async calls have returned: a blocking
  // implementation would wait for rank 1 forever (and fail at the timeout).
  auto groups = gloo_threads_group(2, 10, CollectiveAlgo::Ring);
  std::promise<void> posted;
  std::shared_future<void> rank0_posted = posted.get_future().share();
  at::Tensor x[2] = {at::full({1000}, 1.0), at::full({1000}, 3.0)};
  std::vector<at::Tensor> got[2];
  run_gloo_ranks(groups, [&](Communicator& c) {
    const int64_t r = c.rank();
    if (r == 1) rank0_posted.wait();
    Work reduce = c.all_reduce_async(x[r], ReduceOp::Mean, "async");
    Work swap = c.exchange_with_async(at::full({10}, double(r)), got[r], {1 - r}, "async-swap");
    if (r == 0) posted.set_value();
    reduce.wait();
    swap.wait();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(at::equal(x[r], at::full({1000}, 2.0))) << "rank " << r;
    EXPECT_TRUE(at::equal(got[r].at(0), at::full({10}, double(1 - r)))) << "rank " << r;
  }
}

TEST(GlooGroup, ARankWaitingForAnAbsentPeerFailsAfterTheTimeoutNamingTheOp) {
  auto groups = gloo_threads_group(2, 2, CollectiveAlgo::Ring);
  at::Tensor t = at::ones({10});
  const auto start = std::chrono::steady_clock::now();
  auto rank0 = spawn([&] { groups[0]->comm().all_reduce(t, ReduceOp::Sum, "lonely"); });
  ASSERT_EQ(rank0.wait_for(30s), std::future_status::ready) << "rank 0 hung past its 2 s timeout";
  try {
    rank0.get();
    FAIL() << "all_reduce without its peer returned";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce on rank 0 failed"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 20s);
}

// ATOLL_DIST_TIMEOUT=inf once passed validate() (it only asked for > 0) and
// reached a double -> int64 cast that is undefined for inf, NaN and huge values.
TEST(DistOptions, ATimeoutThatIsNotFiniteOrOutsideOneSecondToADayIsRefusedNamingTheRange) {
  for (const char* bad : {"inf", "-inf", "nan", "1e300", "1e400", "-5", "0", "0.5", "86401", "9e18", "10s", ""}) {
    const std::string what = invalid_argument_message([&] { parse_dist_timeout(bad, "ATOLL_DIST_TIMEOUT"); });
    EXPECT_EQ(what.rfind(std::string("ATOLL_DIST_TIMEOUT='") + bad + "' is ", 0), 0u) << bad << ": " << what;
    EXPECT_NE(what.find("a number of seconds from 1 to 86400 (a day)"), std::string::npos) << bad << ": " << what;
  }
  EXPECT_EQ(parse_dist_timeout("1", "t"), 1.0);
  EXPECT_EQ(parse_dist_timeout("86400", "t"), 86400.0);
  EXPECT_EQ(parse_dist_timeout("2.5", "t"), 2.5);
  // From the environment, and set in code.
  setenv("ATOLL_DIST_TIMEOUT", "inf", 1);
  const std::string from_env = invalid_argument_message([] { dist_options_from_env(); });
  EXPECT_NE(from_env.find("environment variable ATOLL_DIST_TIMEOUT='inf'"), std::string::npos) << from_env;
  unsetenv("ATOLL_DIST_TIMEOUT");
  DistOptions o;
  o.rank = 0;
  o.world_size = 1;
  for (const double t : {std::numeric_limits<double>::infinity(), std::nan(""), 1e19, 0.25}) {
    o.timeout_s = t;
    EXPECT_NE(invalid_argument_message([&] { validate(o); }).find("must be a number of seconds from 1 to 86400"),
              std::string::npos)
        << t;
  }
  o.timeout_s = 30;
  EXPECT_NO_THROW(validate(o));
  // The conversion itself refuses what it cannot represent.
  EXPECT_THROW(to_ms(std::numeric_limits<double>::infinity()), std::invalid_argument);
  EXPECT_THROW(to_ms(std::nan("")), std::invalid_argument);
  EXPECT_EQ(to_ms(2.5).count(), 2500);
}

TEST(InProcessGroup, LargeFloatAllReduceLeavesEveryRanksOwnTensorHoldingTheResult) {
  // Above the size where ranks share the work: every rank's tensor, including
  // float views into a larger buffer, holds the mean when all_reduce returns.
  const int64_t len = 300001;
  auto group = make_group(4);
  run_ranks(group, [len](Communicator& c) {
    at::Tensor buffer = at::full({len + 7}, -1.0f);
    at::Tensor t = buffer.narrow(0, 3, len);
    t.fill_(float(4 * (c.rank() + 1)));  // 4, 8, 12, 16: mean 10, exact
    c.all_reduce(t, ReduceOp::Mean, "big");
    EXPECT_TRUE(at::equal(t, at::full({len}, 10.0f)));
    EXPECT_EQ(buffer[0].item<float>(), -1.0f);
    EXPECT_EQ(buffer[len + 6].item<float>(), -1.0f);
    c.all_reduce(t, ReduceOp::Sum, "big");
    EXPECT_TRUE(at::equal(t, at::full({len}, 40.0f)));
  });
}

TEST(InProcessGroup, NonContiguousTensorsAreReducedAndWrittenBackInPlace) {
  auto group = make_group(3);
  run_ranks(group, [](Communicator& c) {
    at::Tensor base = at::arange(12, at::kDouble).reshape({3, 4}) * (c.rank() + 1);
    at::Tensor t = base.t();  // (4, 3), a non-contiguous view of base
    ASSERT_FALSE(t.is_contiguous());
    c.all_reduce(t, ReduceOp::Sum, "nc");
    EXPECT_TRUE(at::equal(base, at::arange(12, at::kDouble).reshape({3, 4}) * 6));
  });
}

TEST(InProcessGroup, IntegerMeanRoundsTowardZero) {
  auto group = make_group(2);
  run_ranks(group, [](Communicator& c) {
    at::Tensor t = c.rank() == 0 ? at::tensor({3, -3, 4}, at::kLong) : at::zeros({3}, at::kLong);
    c.all_reduce(t, ReduceOp::Mean, "int");
    EXPECT_TRUE(at::equal(t, at::tensor({1, -1, 2}, at::kLong))) << t;
  });
}

// ---------------------------------------------------------------------------
// Ledger

void expect_entry(const LedgerEntry& e, CommOp op, const ByteCount& want, const std::string& what) {
  EXPECT_EQ(e.op, op) << what;
  EXPECT_DOUBLE_EQ(e.sent_bytes, want.sent) << what;
  EXPECT_DOUBLE_EQ(e.received_bytes, want.received) << what;
}

TEST(Ledger, ByteCountsEqualBytesForEveryOpAndAlgorithmAtN4) {
  const int64_t n = 4;
  for (CollectiveAlgo algo : {CollectiveAlgo::Ring, CollectiveAlgo::Tree, CollectiveAlgo::ParameterServer}) {
    SCOPED_TRACE(to_string(algo));
    auto group = make_group(n, algo);
    run_ranks(group, [n, algo](Communicator& c) {
      const int64_t r = c.rank();
      const double s = 100 * 4;  // 100 float32
      at::Tensor t = at::ones({100}, at::kFloat);
      c.all_reduce(t, ReduceOp::Sum, "grad");
      c.all_reduce_async(t, ReduceOp::Mean, "grad").wait();
      std::vector<at::Tensor> out;
      c.all_gather(t, out, "gather");
      c.broadcast(t, 1, "bcast");
      c.barrier();
      at::Tensor got = at::empty_like(t);
      c.exchange(t, got, r ^ 1, "pair");
      c.send(t, (r + 1) % n, "ring");
      c.recv(got, (r + n - 1) % n, "ring");

      const auto& e = c.ledger().entries();
      ASSERT_EQ(e.size(), 8u);
      expect_entry(e[0], CommOp::AllReduce, bytes_for(CommOp::AllReduce, algo, s, n, false), "all_reduce");
      expect_entry(e[1], CommOp::AllReduce, bytes_for(CommOp::AllReduce, algo, s, n, false), "all_reduce_async");
      expect_entry(e[2], CommOp::AllGather, bytes_for(CommOp::AllGather, algo, s, n, false), "all_gather");
      expect_entry(e[3], CommOp::Broadcast, bytes_for(CommOp::Broadcast, algo, s, n, r == 1), "broadcast");
      expect_entry(e[4], CommOp::Barrier, ByteCount{}, "barrier");
      expect_entry(e[5], CommOp::Exchange, ByteCount{s, s}, "exchange");
      expect_entry(e[6], CommOp::Send, ByteCount{s, 0}, "send");
      expect_entry(e[7], CommOp::Recv, ByteCount{0, s}, "recv");
      for (size_t i = 0; i < e.size(); ++i) {
        EXPECT_DOUBLE_EQ(e[i].payload_bytes, i == 4 ? 0.0 : s) << i;
        EXPECT_EQ(e[i].network_seconds, 0.0) << "no network model attached";
      }
      double sent = 0, received = 0;
      for (const auto& x : e) {
        sent += x.sent_bytes;
        received += x.received_bytes;
      }
      EXPECT_DOUBLE_EQ(c.ledger().total_sent(), sent);
      EXPECT_DOUBLE_EQ(c.ledger().total_received(), received);
      EXPECT_EQ(c.ledger().ops(), 8);
    });
  }
}

TEST(Ledger, WorldOfOneMovesZeroBytes) {
  auto group = make_group(1);
  run_ranks(group, [](Communicator& c) {
    at::Tensor t = at::ones({1000}, at::kFloat);
    c.all_reduce(t, ReduceOp::Sum, "grad");
    c.all_reduce_async(t, ReduceOp::Mean, "grad").wait();
    std::vector<at::Tensor> out;
    c.all_gather(t, out, "gather");
    c.broadcast(t, 0, "bcast");
    c.barrier();
    EXPECT_EQ(c.ledger().ops(), 5);
    for (const auto& e : c.ledger().entries()) {
      EXPECT_EQ(e.sent_bytes, 0.0) << to_string(e.op);
      EXPECT_EQ(e.received_bytes, 0.0) << to_string(e.op);
    }
    EXPECT_EQ(c.ledger().total_sent(), 0.0);
    EXPECT_EQ(c.ledger().total_received(), 0.0);
  });
}

TEST(Ledger, VariableSizeAllGatherCountsOwnSizeSentAndOthersReceived) {
  const int64_t n = 4;
  auto group = make_group(n);
  run_ranks(group, [n](Communicator& c) {
    const int64_t r = c.rank();
    std::vector<at::Tensor> out;
    c.all_gather(at::zeros({r + 1}, at::kDouble), out, "sparse");  // 8 (r+1) bytes
    const LedgerEntry& e = c.ledger().entries().at(0);
    const double own = 8.0 * (r + 1);
    const double all = 8.0 * (1 + 2 + 3 + 4);
    EXPECT_DOUBLE_EQ(e.payload_bytes, own);
    EXPECT_DOUBLE_EQ(e.sent_bytes, (n - 1) * own);
    EXPECT_DOUBLE_EQ(e.received_bytes, all - own);
  });
}

TEST(Ledger, SentBytesAccumulatePerTagAndMarksReturnTheDelta) {
  auto group = make_group(2);
  run_ranks(group, [](Communicator& c) {
    at::Tensor a = at::ones({10}, at::kFloat);   // 40 bytes -> ring N=2 sends 40
    at::Tensor b = at::ones({25}, at::kDouble);  // 200 bytes -> sends 200
    c.set_step(3);
    c.all_reduce(a, ReduceOp::Sum, "a");
    EXPECT_DOUBLE_EQ(c.ledger().take_sent_since_mark(), 40);
    EXPECT_DOUBLE_EQ(c.ledger().take_received_since_mark(), 40);
    c.set_step(4);
    c.all_reduce(a, ReduceOp::Sum, "a");
    c.all_reduce(b, ReduceOp::Sum, "b");
    EXPECT_DOUBLE_EQ(c.ledger().take_sent_since_mark(), 240);
    EXPECT_DOUBLE_EQ(c.ledger().take_sent_since_mark(), 0);
    EXPECT_DOUBLE_EQ(c.ledger().take_received_since_mark(), 240);
    const auto& by_tag = c.ledger().sent_by_tag();
    ASSERT_EQ(by_tag.size(), 2u);
    EXPECT_DOUBLE_EQ(by_tag.at("a"), 80);
    EXPECT_DOUBLE_EQ(by_tag.at("b"), 200);
    EXPECT_DOUBLE_EQ(c.ledger().total_sent(), 280);
    EXPECT_EQ(c.ledger().entries()[0].step, 3);
    EXPECT_EQ(c.ledger().entries()[2].step, 4);
    EXPECT_EQ(c.ledger().entries()[2].tag, "b");
  });
}

// ---------------------------------------------------------------------------
// Reproducibility

// 4097 elements: the last rank to arrive reduces alone; 200,003: every rank
// reduces a slice (uneven: 200,003 is not a multiple of 6) in place.
class AllReduceLength : public ::testing::TestWithParam<int64_t> {};
INSTANTIATE_TEST_SUITE_P(InProcessGroup, AllReduceLength, ::testing::Values(4097, 200003));

TEST_P(AllReduceLength, Float32AllReduceIsBitwiseIdenticalOver20RunsWithRandomArrivalOrder) {
  const int64_t n = 6, len = GetParam();
  std::vector<at::Tensor> inputs;
  for (int64_t r = 0; r < n; ++r) inputs.push_back(at::randn({len}, at::kFloat) * 1000);
  // Reference: the documented order, t0 + t1 + ... + t(n-1).
  at::Tensor want_sum = inputs[0].clone();
  for (int64_t r = 1; r < n; ++r) want_sum += inputs[r];
  at::Tensor want_mean = want_sum / static_cast<double>(n);

  auto group = make_group(n);
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<at::Tensor> sums(n), means(n);
    run_ranks(group, [&](Communicator& c) {
      const int64_t r = c.rank();
      std::mt19937 rng(static_cast<uint32_t>(rep * 1000 + r));
      std::uniform_int_distribution<int> us(0, 2000);
      std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
      at::Tensor s = inputs[r].clone();
      c.all_reduce(s, ReduceOp::Sum, "grad");
      std::this_thread::sleep_for(std::chrono::microseconds(us(rng)));
      at::Tensor m = inputs[r].clone();
      c.all_reduce_async(m, ReduceOp::Mean, "grad").wait();
      sums[r] = s;
      means[r] = m;
    });
    for (int64_t r = 0; r < n; ++r) {
      ASSERT_EQ(std::memcmp(sums[r].data_ptr(), want_sum.data_ptr(), len * sizeof(float)), 0)
          << "rep " << rep << " rank " << r;
      ASSERT_EQ(std::memcmp(means[r].data_ptr(), want_mean.data_ptr(), len * sizeof(float)), 0)
          << "rep " << rep << " rank " << r;
    }
  }
}

// ---------------------------------------------------------------------------
// Abort

TEST(InProcessGroup, AbortReleasesRanksBlockedInAllReduceWithCommAborted) {
  auto group = make_group(4);
  std::vector<std::future<void>> blocked;
  for (int64_t r = 1; r < 4; ++r) {
    blocked.push_back(spawn([group, r] {
      at::Tensor t = at::ones({8}, at::kFloat);
      group->rank(r).all_reduce(t, ReduceOp::Sum, "grad");  // rank 0 never comes
    }));
  }
  // The three collective waiters must stay parked until abort().
  std::this_thread::sleep_for(50ms);
  for (auto& f : blocked) EXPECT_EQ(f.wait_for(0s), std::future_status::timeout);
  EXPECT_FALSE(group->aborted());

  group->abort("worker 0 failed");
  EXPECT_TRUE(group->aborted());
  for (auto& f : blocked) {
    ASSERT_EQ(f.wait_for(5s), std::future_status::ready) << "a rank stayed blocked after abort()";
    try {
      f.get();
      ADD_FAILURE() << "all_reduce returned normally after abort()";
    } catch (const CommAborted& e) {
      EXPECT_EQ(std::string(e.what()), "communication aborted: worker 0 failed");
    }
  }
  // Entering any op after abort() throws at once.
  at::Tensor t = at::ones({8}, at::kFloat);
  EXPECT_THROW(group->rank(0).all_reduce(t, ReduceOp::Sum, "grad"), CommAborted);
  EXPECT_THROW(group->rank(0).send(t, 1, "x"), CommAborted);
  EXPECT_THROW(group->rank(0).barrier(), CommAborted);
}

TEST(InProcessGroup, AbortReleasesRankBlockedInRecv) {
  auto group = make_group(2);
  auto f = spawn([group] {
    at::Tensor t = at::empty({4}, at::kFloat);
    group->rank(1).recv(t, 0, "x");  // rank 0 never sends
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(f.wait_for(0s), std::future_status::timeout);
  group->abort("stop");
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_THROW(f.get(), CommAborted);
}

TEST(InProcessGroup, DestroyingTheGroupReleasesARankBlockedInBarrier) {
  auto group = std::make_unique<InProcessGroup>(2);
  Communicator* c1 = &group->rank(1);
  auto f = spawn([c1] {
    c1->send(at::ones({1}, at::kFloat), 0, "ready");
    c1->barrier();  // rank 0 never comes
  });
  at::Tensor ready = at::empty({1}, at::kFloat);
  group->rank(0).recv(ready, 1, "ready");
  std::this_thread::sleep_for(50ms);  // rank 1 is now parked in barrier()
  EXPECT_EQ(f.wait_for(0s), std::future_status::timeout);
  group.reset();  // returns only once rank 1 has left the group's state
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  try {
    f.get();
    ADD_FAILURE() << "barrier returned normally";
  } catch (const CommAborted& e) {
    EXPECT_NE(std::string(e.what()).find("destroyed"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------
// Mismatches and validation

void expect_invalid_in_every_rank(int64_t n, const std::function<void(Communicator&)>& fn,
                                  const std::vector<std::string>& must_mention) {
  auto group = make_group(n);
  std::vector<std::string> messages(n);
  run_ranks(group, [&](Communicator& c) {
    try {
      fn(c);
    } catch (const std::invalid_argument& e) {
      messages[c.rank()] = e.what();
    }
  });
  for (int64_t r = 0; r < n; ++r) {
    EXPECT_FALSE(messages[r].empty()) << "rank " << r << " did not throw";
    for (const auto& word : must_mention) {
      EXPECT_NE(messages[r].find(word), std::string::npos) << messages[r];
    }
  }
  // The group stays usable after a detected mismatch.
  run_ranks(group, [](Communicator& c) {
    at::Tensor t = at::ones({3}, at::kLong);
    c.all_reduce(t, ReduceOp::Sum, "after");
    EXPECT_TRUE(at::equal(t, at::full({3}, c.size(), at::kLong)));
  });
}

TEST(InProcessGroup, MismatchedShapesThrowInEveryRank) {
  expect_invalid_in_every_rank(3,
                               [](Communicator& c) {
                                 at::Tensor t = at::ones({c.rank() == 2 ? 5 : 4}, at::kFloat);
                                 c.all_reduce(t, ReduceOp::Sum, "grad");
                               },
                               {"rank 0", "rank 2", "4 elements", "5 elements"});
  expect_invalid_in_every_rank(3,
                               [](Communicator& c) {
                                 at::Tensor t = at::ones({4}, c.rank() == 1 ? at::kDouble : at::kFloat);
                                 c.broadcast(t, 0, "params");
                               },
                               {"broadcast", "rank 0", "rank 1", "Double"});
  expect_invalid_in_every_rank(2,
                               [](Communicator& c) {
                                 at::Tensor t = at::ones({4}, at::kFloat);
                                 if (c.rank() == 0) {
                                   c.all_reduce(t, ReduceOp::Sum, "grad");
                                 } else {
                                   c.broadcast(t, 0, "grad");
                                 }
                               },
                               {"all_reduce", "broadcast", "rank 1"});
  expect_invalid_in_every_rank(2,
                               [](Communicator& c) {
                                 std::vector<at::Tensor> out;
                                 c.all_gather(at::ones({2}, c.rank() == 0 ? at::kFloat : at::kLong), out, "g");
                               },
                               {"all_gather", "rank 1"});
}

TEST(InProcessGroup, PointToPointShapeMismatchThrowsInReceiver) {
  auto group = make_group(2);
  run_ranks(group, [](Communicator& c) {
    if (c.rank() == 0) {
      c.send(at::ones({3}, at::kFloat), 1, "x");
    } else {
      at::Tensor t = at::empty({4}, at::kFloat);
      EXPECT_THROW(c.recv(t, 0, "x"), std::invalid_argument);
    }
  });
}

TEST(InProcessGroup, InvalidArgumentsThrowBeforeAnythingIsRecorded) {
  EXPECT_THROW(InProcessGroup(0), std::invalid_argument);
  auto group = make_group(2);
  EXPECT_THROW(group->rank(2), std::invalid_argument);
  Communicator& c = group->rank(0);
  at::Tensor t = at::ones({4}, at::kFloat);
  at::Tensor u = at::empty({4}, at::kFloat);
  EXPECT_THROW(c.exchange(t, u, 0, "x"), std::invalid_argument);  // self
  EXPECT_THROW(c.exchange(t, u, 2, "x"), std::invalid_argument);  // out of range
  at::Tensor wrong = at::empty({5}, at::kFloat);
  EXPECT_THROW(c.exchange(t, wrong, 1, "x"), std::invalid_argument);  // shape differs
  EXPECT_THROW(c.send(t, -1, "x"), std::invalid_argument);
  EXPECT_THROW(c.send(t, 0, "x"), std::invalid_argument);
  EXPECT_THROW(c.recv(t, 7, "x"), std::invalid_argument);
  EXPECT_THROW(c.broadcast(t, 2, "x"), std::invalid_argument);
  at::Tensor undefined;
  EXPECT_THROW(c.all_reduce(undefined, ReduceOp::Sum, "x"), std::invalid_argument);
  EXPECT_EQ(c.ledger().ops(), 0);
}

// ---------------------------------------------------------------------------
// Simulated time

// Two 4000 B/s links, no latency: a ring all-reduce of 1000 float32 between
// two ranks moves 2(N-1)/N * S = 4000 bytes per link = exactly 1 s.
NetworkModel two_links(double jitter = 0) {
  return NetworkModel({Link{4000, 0}, Link{4000, 0}}, CollectiveAlgo::Ring, 0, jitter, 7);
}

TEST(SimulatedTime, BlockingAllReduceEndsAtLastArrivalPlusNetworkTime) {
  const NetworkModel net = two_links();
  ASSERT_DOUBLE_EQ(net.collective_seconds(CommOp::AllReduce, 4000, 0), 1.0);
  auto group = make_group(2);
  VirtualClock clocks[2];
  clocks[0].advance_compute(1.0);
  clocks[1].advance_compute(1.5);
  run_ranks(group, [&](Communicator& c) {
    c.attach_clock(&clocks[c.rank()], &net);
    at::Tensor t = at::ones({1000}, at::kFloat);
    c.all_reduce(t, ReduceOp::Sum, "grad");
    EXPECT_DOUBLE_EQ(c.ledger().entries().at(0).network_seconds, 1.0);
  });
  EXPECT_DOUBLE_EQ(clocks[0].now(), 2.5);
  EXPECT_DOUBLE_EQ(clocks[1].now(), 2.5);
  EXPECT_DOUBLE_EQ(clocks[0].blocked_seconds(), 1.5);
  EXPECT_DOUBLE_EQ(clocks[1].blocked_seconds(), 1.0);
}

TEST(SimulatedTime, AsyncAllReduceChargesOnlyTheUnhiddenPartOnWait) {
  const NetworkModel net = two_links();
  auto group = make_group(2);
  VirtualClock clocks[2];
  clocks[0].advance_compute(1.0);
  clocks[1].advance_compute(1.5);
  run_ranks(group, [&](Communicator& c) {
    VirtualClock& clock = clocks[c.rank()];
    c.attach_clock(&clock, &net);
    at::Tensor t = at::ones({1000}, at::kFloat);
    Work w = c.all_reduce_async(t, ReduceOp::Sum, "grad");
    EXPECT_TRUE(w.pending());
    EXPECT_EQ(clock.blocked_seconds(), 0.0) << "nothing charged before wait()";
    clock.advance_compute(0.6);
    w.wait();
    EXPECT_FALSE(w.pending());
    w.wait();  // second wait is a no-op
    EXPECT_TRUE(at::equal(t, at::full({1000}, 2.0f)));
  });
  // Completion at 2.5; compute reached 1.6 and 2.1.
  EXPECT_DOUBLE_EQ(clocks[0].now(), 2.5);
  EXPECT_DOUBLE_EQ(clocks[1].now(), 2.5);
  EXPECT_NEAR(clocks[0].blocked_seconds(), 0.9, 1e-12);
  EXPECT_NEAR(clocks[1].blocked_seconds(), 0.4, 1e-12);
}

TEST(SimulatedTime, PointToPointAndGatherCompleteAtTheirParticipantsTimes) {
  const NetworkModel net = two_links();
  auto group = make_group(2);
  VirtualClock clocks[2];
  clocks[0].advance_compute(1.0);
  clocks[1].advance_compute(3.0);
  run_ranks(group, [&](Communicator& c) {
    c.attach_clock(&clocks[c.rank()], &net);
    const int64_t r = c.rank();
    // Exchange of 4000 bytes: alpha + S/beta = 1 s after the later arrival (3).
    at::Tensor got = at::empty({1000}, at::kFloat);
    c.exchange(at::ones({1000}, at::kFloat), got, 1 - r, "pair");
    EXPECT_DOUBLE_EQ(clocks[r].now(), 4.0);
    // Send is buffered: the sender finishes at its arrival + 1 s; the
    // receiver (idle until 5.5) at max(sender arrival, own arrival) + 1 s.
    if (r == 0) {
      c.send(at::ones({1000}, at::kFloat), 1, "x");
      EXPECT_DOUBLE_EQ(clocks[r].now(), 5.0);
    } else {
      clocks[r].advance_compute(1.5);
      c.recv(got, 0, "x");
      EXPECT_DOUBLE_EQ(clocks[r].now(), 6.5);
    }
    // Variable-size gather (1000 and 2000 float32): (N-1) * S_max / beta = 2 s
    // after the later arrival (6.5).
    std::vector<at::Tensor> out;
    c.all_gather(at::ones({1000 * (r + 1)}, at::kFloat), out, "g");
    EXPECT_DOUBLE_EQ(c.ledger().entries().back().network_seconds, 2.0);
    EXPECT_DOUBLE_EQ(clocks[r].now(), 8.5);
  });
}

TEST(InProcessGroup, ExchangeWithNeighboursDeliversEveryPeersValuesInAnyCallOrder) {
  // A ring of 5 in which each rank lists its peers in a different order, plus
  // rank 4 sitting a second round out: no deadlock, right values, right ledger.
  const int64_t n = 5;
  auto group = make_group(n);
  run_ranks(group, [&](Communicator& c) {
    const int64_t r = c.rank(), left = (r + n - 1) % n, right = (r + 1) % n;
    std::vector<int64_t> peers = r % 2 ? std::vector<int64_t>{right, left} : std::vector<int64_t>{left, right};
    std::vector<at::Tensor> got;
    c.exchange_with(at::full({250}, double(r)), got, peers, "ring");
    ASSERT_EQ(got.size(), 2u);
    EXPECT_TRUE(at::equal(got[0], at::full({250}, double(peers[0]))));
    EXPECT_TRUE(at::equal(got[1], at::full({250}, double(peers[1]))));
    const LedgerEntry& e = c.ledger().entries().back();
    EXPECT_EQ(e.op, CommOp::Exchange);
    EXPECT_DOUBLE_EQ(e.sent_bytes, 2 * 250 * 4);  // |peers| * S each way (float32)
    EXPECT_DOUBLE_EQ(e.received_bytes, 2 * 250 * 4);
    // Round 2: pairs (0,1), (2,3); rank 4 has no partner but still records an op.
    std::vector<int64_t> pair;
    if (r < 4) pair.push_back(r ^ 1);
    c.exchange_with(at::full({4}, double(r)), got, pair, "pairs");
    EXPECT_EQ(c.ledger().ops(), 2);
    if (r < 4) {
      EXPECT_EQ(got.at(0)[0].item<double>(), double(r ^ 1));
    }
    if (r == 4) {
      EXPECT_EQ(c.ledger().entries().back().sent_bytes, 0.0);
    }
  });
}

TEST(InProcessGroup, ExchangeWithRejectsSelfAndDuplicatePeers) {
  auto group = make_group(3);
  std::vector<at::Tensor> got;
  EXPECT_THROW(group->rank(0).exchange_with(at::ones({2}), got, {0}, "x"), std::invalid_argument);
  EXPECT_THROW(group->rank(0).exchange_with(at::ones({2}), got, {1, 1}, "x"), std::invalid_argument);
  EXPECT_THROW(group->rank(0).exchange_with(at::ones({2}), got, {3}, "x"), std::invalid_argument);
  EXPECT_EQ(group->rank(0).ledger().ops(), 0);
}

TEST(SimulatedTime, NeighbourExchangeCostsAlphaPlusPeersTimesSOverBeta) {
  // Three 4000 B/s links, 0.1 s latency: 1000 float32 to two peers = 0.1 + 2 s.
  const NetworkModel net({Link{4000, 0.1}, Link{4000, 0.1}, Link{4000, 0.1}}, CollectiveAlgo::Ring, 0, 0, 7);
  auto group = make_group(3);
  VirtualClock clocks[3];
  run_ranks(group, [&](Communicator& c) {
    c.attach_clock(&clocks[c.rank()], &net);
    std::vector<int64_t> peers;
    for (int64_t p = 0; p < 3; ++p)
      if (p != c.rank()) peers.push_back(p);
    std::vector<at::Tensor> got;
    Work w = c.exchange_with_async(at::ones({1000}, at::kFloat), got, peers, "ring");
    clocks[c.rank()].advance_compute(0.5);  // hides 0.5 s of the 2.1 s
    w.wait();
  });
  for (auto& clock : clocks) {
    EXPECT_NEAR(clock.now(), 2.1, 1e-12);
    EXPECT_NEAR(clock.blocked_seconds(), 1.6, 1e-12);
  }
}

// DDP's overlapped, bucketed all-reduce (ALGORITHMS.md 7.3) against a hand
// computation. Two ranks, ring, per bucket d_j = 2(N-1) alpha + 2(N-1)/N S_j / beta
// = 2 alpha + S_j / beta. A step's compute T = 0.6 s (forward 0.2, backward
// 0.4) is charged after set_step(); 1000 float32 go in three buckets of
// 250, 250, 500 elements (1000, 1000, 2000 bytes), ready at
//   r = 0.2 + 0.4 * {0.25, 0.5, 1} = {0.3, 0.4, 0.6}.
// Returns each rank's blocked seconds and rank 0's ledger.
struct OverlapRun {
  double blocked[2] = {0, 0};
  Ledger ledger;
};
OverlapRun run_overlapped(double beta, double alpha, bool overlap, double compute1 = 0.6) {
  const NetworkModel net({Link{beta, alpha}, Link{beta, alpha}}, CollectiveAlgo::Ring, 0, 0, 7);
  auto group = make_group(2);
  VirtualClock clocks[2];
  OverlapRun out;
  run_ranks(group, [&](Communicator& c) {
    VirtualClock& clock = clocks[c.rank()];
    c.attach_clock(&clock, &net);
    c.set_step(0);
    clock.advance_compute(c.rank() == 0 ? 0.6 : compute1);
    at::Tensor t = at::full({1000}, float(c.rank() + 1));
    if (overlap) {
      c.all_reduce_overlapped(t, ReduceOp::Mean, "grad", {250, 250, 500});
    } else {
      c.all_reduce(t, ReduceOp::Mean, "grad");
    }
    EXPECT_TRUE(at::equal(t, at::full({1000}, 1.5f)));
  });
  for (int r = 0; r < 2; ++r) out.blocked[r] = clocks[r].blocked_seconds();
  out.ledger = group->rank(0).ledger();
  return out;
}

// Slow link: beta = 4000 B/s, alpha = 10 ms: d = {0.27, 0.27, 0.52} s.
//   bucket 1: 0.3  -> 0.57;  bucket 2: max(0.4, 0.57) = 0.57 -> 0.84;
//   bucket 3: max(0.6, 0.84) = 0.84 -> 1.36.  Blocked 1.36 - 0.6 = 0.76 s:
//   the link's total 1.06 s (three latencies) minus the 0.3 s it was busy
//   before the compute ended. Without overlap: 2 alpha + 4000 / 4000 = 1.02 s.
TEST(SimulatedTime, OverlappedBucketsOnASlowLinkChargeTheTotalMinusTheHiddenPart) {
  const OverlapRun on = run_overlapped(4000, 0.01, true);
  EXPECT_NEAR(on.blocked[0], 0.76, 1e-12);
  EXPECT_NEAR(on.blocked[1], 0.76, 1e-12);
  const OverlapRun off = run_overlapped(4000, 0.01, false);
  EXPECT_NEAR(off.blocked[0], 1.02, 1e-12);
  // One ledger entry per bucket; the bytes add up to the un-bucketed op's.
  ASSERT_EQ(on.ledger.ops(), 3);
  EXPECT_DOUBLE_EQ(on.ledger.entries()[0].payload_bytes, 1000);
  EXPECT_DOUBLE_EQ(on.ledger.entries()[1].payload_bytes, 1000);
  EXPECT_DOUBLE_EQ(on.ledger.entries()[2].payload_bytes, 2000);
  EXPECT_NEAR(on.ledger.entries()[2].network_seconds, 0.52, 1e-12);
  ASSERT_EQ(off.ledger.ops(), 1);
  EXPECT_DOUBLE_EQ(on.ledger.total_sent(), off.ledger.total_sent());
}

// Fast link: beta = 4e6 B/s, no latency: d = {0.00025, 0.00025, 0.0005} s.
// Buckets 1 and 2 end at 0.30025 and 0.40025, inside the backward pass; only
// the last, ready when the compute ends, shows: blocked 0.0005 s (< 0.1% of
// T: compute-bound), against 0.001 s without overlap.
TEST(SimulatedTime, OverlappedBucketsOnAFastLinkAreHiddenButTheLast) {
  const OverlapRun on = run_overlapped(4e6, 0, true);
  EXPECT_NEAR(on.blocked[0], 0.0005, 1e-12);
  EXPECT_NEAR(run_overlapped(4e6, 0, false).blocked[0], 0.001, 1e-12);
}

// Ranks at different speeds: rank 1 computes T = 1.2 s (ready at
// 0.4 + 0.8 * {0.25, 0.5, 1} = {0.6, 0.8, 1.2}); on the slow link its own
// schedule ends at 0.6 + 0.27 = 0.87 -> max(0.8, 0.87) + 0.27 = 1.14 ->
// max(1.2, 1.14) + 0.52 = 1.72, later than rank 0's 1.36, so both finish at
// 1.72 (the buckets wait for the later rank): blocked 1.12 and 0.52 s.
TEST(SimulatedTime, OverlappedBucketsWaitForTheSlowestRank) {
  const OverlapRun on = run_overlapped(4000, 0.01, true, 1.2);
  EXPECT_NEAR(on.blocked[0], 1.72 - 0.6, 1e-12);
  EXPECT_NEAR(on.blocked[1], 1.72 - 1.2, 1e-12);
}

TEST(SimulatedTime, OverlappedAllReduceRejectsBucketsThatDoNotCoverTheTensor) {
  auto group = make_group(1);
  at::Tensor t = at::ones({10});
  EXPECT_THROW(group->rank(0).all_reduce_overlapped(t, ReduceOp::Sum, "grad", {4, 5}), std::invalid_argument);
  EXPECT_THROW(group->rank(0).all_reduce_overlapped(t, ReduceOp::Sum, "grad", {}), std::invalid_argument);
  EXPECT_THROW(group->rank(0).all_reduce_overlapped(t, ReduceOp::Sum, "grad", {10, 0}), std::invalid_argument);
}

TEST(SimulatedTime, JitteredOpsCostTheSameOnEveryRank) {
  const NetworkModel net = two_links(/*jitter=*/0.25);
  auto group = make_group(2);
  VirtualClock clocks[2];
  run_ranks(group, [&](Communicator& c) {
    c.attach_clock(&clocks[c.rank()], &net);
    at::Tensor t = at::ones({1000}, at::kFloat);
    for (int i = 0; i < 5; ++i) {
      c.all_reduce(t, ReduceOp::Sum, "grad");
      c.barrier();
    }
  });
  EXPECT_EQ(clocks[0].now(), clocks[1].now());
  EXPECT_GT(clocks[0].now(), 5.0);  // 5 all-reduces of >= 1 s
}

}  // namespace
}  // namespace atl
