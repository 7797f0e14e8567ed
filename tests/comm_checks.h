// Shared by the communicator tests (comm_test.cpp, island_groups_test.cpp):
// running ranks on threads with a deadline, and the conformance checks every
// backend and every group arrangement must pass.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "atoll/comm.h"
#include "atoll/dist.h"

namespace atl::comm_checks {

// Runs `fn` on a detached thread; the future reports its result. A thread
// that never returns is leaked instead of hanging the test.
inline std::future<void> spawn(std::function<void()> fn) {
  auto promise = std::make_shared<std::promise<void>>();
  std::future<void> done = promise->get_future();
  std::thread([promise, fn = std::move(fn)] {
    try {
      fn();
      promise->set_value();
    } catch (...) {
      promise->set_exception(std::current_exception());
    }
  }).detach();
  return done;
}

// Runs fn(r) for r in 0..n-1, each on its own thread, and rethrows the first
// exception (lowest r). If the threads do not finish in time, `abort` is
// called to release them (in-process groups); if there is none (Gloo cannot
// be aborted from outside) or even that does not release them, the process
// stops rather than hang (the threads may reference the caller's locals): a
// hang becomes a failure, never a stuck CI job.
inline void run_on_threads(int64_t n, const std::function<void(int64_t)>& fn, std::chrono::seconds timeout,
                           const std::function<void()>& abort = nullptr) {
  std::vector<std::future<void>> done;
  for (int64_t r = 0; r < n; ++r) done.push_back(spawn([r, &fn] { fn(r); }));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (auto& f : done) {
    if (f.wait_until(deadline) != std::future_status::ready) timed_out = true;
  }
  if (timed_out) {
    if (!abort) {
      std::fprintf(stderr, "ranks still blocked after the timeout and cannot be aborted; stopping\n");
      std::abort();
    }
    abort();
    for (auto& f : done) {
      if (f.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
        std::fprintf(stderr, "ranks still blocked 10 s after abort(); stopping\n");
        std::abort();
      }
    }
    ADD_FAILURE() << "ranks did not finish within the timeout; the group was aborted";
  }
  for (auto& f : done) f.get();
}

// Runs fn(comm) on every rank of an in-process group, each in its own thread.
inline void run_ranks(const std::shared_ptr<InProcessGroup>& group, const std::function<void(Communicator&)>& fn,
                      std::chrono::seconds timeout = std::chrono::seconds(60)) {
  run_on_threads(
      group->size(), [&](int64_t r) { fn(group->rank(r)); }, timeout, [&] { group->abort("test timed out"); });
}

// Runs fn(group) on every Gloo rank (an element of gloo_threads_group's
// result) in its own thread.
inline void run_gloo_groups(std::vector<std::unique_ptr<DistGroup>>& groups, const std::function<void(DistGroup&)>& fn,
                            std::chrono::seconds timeout = std::chrono::seconds(60)) {
  run_on_threads(
      static_cast<int64_t>(groups.size()), [&](int64_t r) { fn(*groups[r]); }, timeout);
}

// Runs fn(comm) on every Gloo rank's world communicator.
inline void run_gloo_ranks(std::vector<std::unique_ptr<DistGroup>>& groups,
                           const std::function<void(Communicator&)>& fn,
                           std::chrono::seconds timeout = std::chrono::seconds(60)) {
  run_gloo_groups(
      groups, [&](DistGroup& g) { fn(g.comm()); }, timeout);
}

inline std::shared_ptr<InProcessGroup> make_group(int64_t n, CollectiveAlgo algo = CollectiveAlgo::Ring) {
  return std::make_shared<InProcessGroup>(n, algo);
}

inline at::Tensor iota(int64_t n, at::ScalarType dtype) { return at::arange(n, at::TensorOptions(dtype)); }

// Every op with exact, rank-valued results on one rank of n; the same checks
// run against the in-process group and the Gloo backend. Dtypes are chosen so
// every result is exact and the 2^20-element runs stay cheap: int32 sums
// (< 2^31), float32 means (sums < 2^24, so exact), int8 gathers (each rank
// gathers N buffers, the largest cost of the suite).
inline void check_all_ops(Communicator& c, int64_t n, int64_t p, const at::Tensor& i, const at::Tensor& fi) {
  const int64_t r = c.rank();
  // Sum of (r + 1 + i) over ranks: n(n+1)/2 + n i.
  at::Tensor s = i + (r + 1);
  c.all_reduce(s, ReduceOp::Sum, "sum");
  EXPECT_TRUE(at::equal(s, i * n + n * (n + 1) / 2)) << "rank " << r;

  // Mean of (r + 1 + i): exact sums, one correctly rounded division.
  at::Tensor m = fi + static_cast<double>(r + 1);
  c.all_reduce(m, ReduceOp::Mean, "mean");
  EXPECT_TRUE(at::equal(m, fi + (n + 1) / 2.0)) << "rank " << r;

  // Variable sizes: rank k sends p + k elements of value k.
  std::vector<at::Tensor> gathered;
  c.all_gather(at::full({p + r}, r, at::kChar), gathered, "gather");
  EXPECT_EQ(static_cast<int64_t>(gathered.size()), n);
  for (int64_t k = 0; k < static_cast<int64_t>(gathered.size()); ++k) {
    EXPECT_TRUE(at::equal(gathered[k], at::full({p + k}, k, at::kChar))) << "rank " << r << " entry " << k;
  }
  gathered.clear();

  // Broadcast from the last rank (non-zero when n > 1).
  const int64_t root = n - 1;
  at::Tensor b = i + 1000 * r;
  c.broadcast(b, root, "bcast");
  EXPECT_TRUE(at::equal(b, i + 1000 * root)) << "rank " << r;

  // Pairs 0<->1, 2<->3, ...; an odd last rank sits out.
  const int64_t peer = r ^ 1;
  at::Tensor got = at::empty({p}, at::kInt);
  if (peer < n) {
    c.exchange(i + 10 * r, got, peer, "pair");
    EXPECT_TRUE(at::equal(got, i + 10 * peer)) << "rank " << r;
  }

  // Ring: send to the right, receive from the left (send is buffered).
  if (n > 1) {
    const int64_t right = (r + 1) % n, left = (r + n - 1) % n;
    c.send(i - r, right, "ring");
    c.recv(got, left, "ring");
    EXPECT_TRUE(at::equal(got, i - left)) << "rank " << r;
  }

  // Neighbourhood exchange with both ring neighbours, listed in either order.
  if (n > 2) {
    const int64_t right = (r + 1) % n, left = (r + n - 1) % n;
    const std::vector<int64_t> peers = r % 2 ? std::vector<int64_t>{right, left} : std::vector<int64_t>{left, right};
    std::vector<at::Tensor> recvs;
    c.exchange_with(i + 100 * r, recvs, peers, "neighbours");
    for (size_t k = 0; k < peers.size(); ++k)
      EXPECT_TRUE(at::equal(recvs[k], i + 100 * peers[k])) << "rank " << r << " peer " << peers[k];
  }
  c.barrier();
}

}  // namespace atl::comm_checks
