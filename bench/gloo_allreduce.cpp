// All-reduce bandwidth between 2 local processes over Gloo (TCP on
// 127.0.0.1), next to the in-process group (2 threads) and a plain memory
// copy of the same bytes, measured in the same run. Prints figures only.
//   build/bench_gloo_allreduce [max_mb=256] [seconds_per_size=1]
// Bus bandwidth = 2(N-1)/N * S / t (what each rank moves under a ring).
#include <ATen/ATen.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "atoll/comm.h"
#include "atoll/dist.h"
#include "atoll/launch.h"
#include "train/threads.h"

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }


// Seconds per op: repeats `op` for about `budget` seconds (at least 3 times)
// after one warm-up, and keeps the fastest repetition (least disturbed).
template <class F>
double time_op(F&& op, double budget) {
  op();
  double best = 1e300, total = 0;
  for (int k = 0; k < 3 || total < budget; ++k) {
    const auto t0 = Clock::now();
    op();
    const double t = since(t0);
    best = std::min(best, t);
    total += t;
  }
  return best;
}

// The Gloo figure: both processes run the same loop; every repetition
// starts together because the all-reduce itself synchronises them.
double gloo_seconds(atl::DistGroup& g, int64_t numel, double budget) {
  at::Tensor t = at::ones({numel}, at::kFloat);
  // Rank 0 decides the repetition count and broadcasts it, so both ranks
  // make the same number of calls.
  at::Tensor reps = at::zeros({1}, at::kLong);
  if (g.rank() == 0) {
    const auto t0 = Clock::now();
    g.comm().all_reduce(t, atl::ReduceOp::Sum, "warm-up");
    reps.fill_(std::max<int64_t>(3, static_cast<int64_t>(budget / std::max(1e-6, since(t0)))));
  } else {
    g.comm().all_reduce(t, atl::ReduceOp::Sum, "warm-up");
  }
  g.comm().broadcast(reps, 0, "reps");
  double best = 1e300;
  for (int64_t k = 0; k < reps.item<int64_t>(); ++k) {
    g.raw_barrier();
    const auto t0 = Clock::now();
    g.comm().all_reduce(t, atl::ReduceOp::Sum, "bench");
    best = std::min(best, since(t0));
  }
  return best;
}

double in_process_seconds(int64_t numel, double budget) {
  atl::InProcessGroup group(2);
  at::Tensor a = at::ones({numel}, at::kFloat), b = at::ones({numel}, at::kFloat);
  return time_op(
      [&] {
        std::thread other([&] { group.rank(1).all_reduce(b, atl::ReduceOp::Sum, "bench"); });
        group.rank(0).all_reduce(a, atl::ReduceOp::Sum, "bench");
        other.join();
      },
      budget);
}

double memcpy_seconds(int64_t numel, double budget) {
  std::vector<float> src(numel, 1.0f), dst(numel);
  return time_op([&] { std::memcpy(dst.data(), src.data(), numel * sizeof(float)); }, budget);
}

}  // namespace

int main(int argc, char** argv) try {
  atl::tune_allocator();  // as in training: freed buffers stay mapped, no page faults per op
  const int64_t max_mb = argc > 1 ? std::stoll(argv[1]) : 256;
  const double budget = argc > 2 ? std::stod(argv[2]) : 1.0;
  std::vector<int64_t> sizes_mb;
  for (int64_t mb = 1; mb <= max_mb; mb *= 4) sizes_mb.push_back(mb);
  if (sizes_mb.back() != max_mb) sizes_mb.push_back(max_mb);

  atl::DistOptions opts;
  opts.world_size = 2;
  opts.master_port = atl::pick_free_port("127.0.0.1");
  opts.timeout_s = 120;
  const pid_t child = fork();
  opts.rank = child == 0 ? 1 : 0;
  auto group = atl::connect_gloo(opts, atl::CollectiveAlgo::Ring);
  std::vector<double> gloo;
  for (int64_t mb : sizes_mb) gloo.push_back(gloo_seconds(*group, mb * (1 << 20) / 4, budget));
  group->finish();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);

  std::printf("all-reduce of float32, 2 ranks; bus bandwidth = 2(N-1)/N * S / t = S / t at N = 2\n");
  std::printf("%8s | %12s %9s | %12s %9s | %10s | %s\n", "size", "gloo 2 proc", "GB/s", "in-process", "GB/s",
              "memcpy GB/s", "speed: gloo vs in-process, in-process vs memcpy");
  for (size_t i = 0; i < sizes_mb.size(); ++i) {
    const int64_t numel = sizes_mb[i] * (1 << 20) / 4;
    const double bytes = double(numel) * 4;
    const double ip = in_process_seconds(numel, budget), mc = memcpy_seconds(numel, budget);
    std::printf("%5lld MB | %10.2f ms %9.3f | %10.2f ms %9.3f | %10.3f | %.3f, %.3f\n", (long long)sizes_mb[i],
                1e3 * gloo[i], bytes / gloo[i] / 1e9, 1e3 * ip, bytes / ip / 1e9, bytes / mc / 1e9,
                ip / gloo[i], mc / ip);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_gloo_allreduce: %s\n", e.what());
  return 1;
}
