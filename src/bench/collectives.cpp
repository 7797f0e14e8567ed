// allreduce: the in-process group's all-reduce (what a simulated collective
// costs in real time) against a memory copy of the same bytes.
// gloo: Gloo's all-reduce between 2 local processes against the in-process
// group's between 2 threads.
#include <ATen/ATen.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

#include "atoll/comm.h"
#include "atoll/dist.h"
#include "atoll/launch.h"
#include "bench/measure.h"
#include "train/threads.h"

namespace atl::bench {
namespace {

std::string mb_label(int64_t bytes) { return std::to_string(bytes >> 20) + " MB"; }

// Seconds per mean all-reduce of `numel` floats among `ranks` threads: the
// ranks run rounds of back-to-back ops; the fastest round counts.
double in_process_seconds(int64_t ranks, int64_t numel, double budget) {
  InProcessGroup group(ranks);
  std::vector<at::Tensor> data;
  for (int64_t r = 0; r < ranks; ++r) data.push_back(at::full({numel}, float(r + 1)));
  // Rounds of at least 16 MB, so small ops are timed over several calls.
  const int64_t per_round = std::max<int64_t>(1, (int64_t(16) << 20) / (numel * 4));
  auto round = [&] {
    std::vector<std::thread> others;
    for (int64_t r = 1; r < ranks; ++r)
      others.emplace_back([&, r] {
        set_compute_threads(1);
        for (int64_t k = 0; k < per_round; ++k) group.rank(r).all_reduce(data[r], ReduceOp::Mean, "bench");
      });
    for (int64_t k = 0; k < per_round; ++k) group.rank(0).all_reduce(data[0], ReduceOp::Mean, "bench");
    for (auto& t : others) t.join();
  };
  return best_seconds(round, budget) / double(per_round);
}

double memcpy_seconds(int64_t numel, double budget) {
  std::vector<float> src(static_cast<size_t>(numel), 1.0f), dst(static_cast<size_t>(numel));
  return best_seconds([&] { std::memcpy(dst.data(), src.data(), size_t(numel) * sizeof(float)); }, budget);
}

// One rank's side of the Gloo measurement; both ranks make the same calls.
double gloo_seconds(DistGroup& g, int64_t numel, double budget) {
  at::Tensor t = at::ones({numel}, at::kFloat);
  // Rank 0 decides the repetition count and broadcasts it.
  at::Tensor reps = at::zeros({1}, at::kLong);
  const auto w0 = Clock::now();
  g.comm().all_reduce(t, ReduceOp::Sum, "warm-up");
  if (g.rank() == 0) reps.fill_(std::max<int64_t>(3, static_cast<int64_t>(budget / std::max(1e-6, since(w0)))));
  g.comm().broadcast(reps, 0, "reps");
  double best = 1e300;
  for (int64_t k = 0; k < reps.item<int64_t>(); ++k) {
    g.raw_barrier();
    const auto t0 = Clock::now();
    g.comm().all_reduce(t, ReduceOp::Mean, "bench");
    best = std::min(best, since(t0));
  }
  return best;
}

}  // namespace

void run_allreduce(const Context& ctx, Sink& sink) {
  const std::vector<int64_t> ranks = ctx.opts.quick ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{2, 4, 8};
  const std::vector<int64_t> mbs = ctx.opts.quick ? std::vector<int64_t>{4} : std::vector<int64_t>{1, 16, 64};
  // An all-reduce of N tensors of S bytes reads N*S and writes N*S bytes, as
  // a copy of N*S bytes does: that copy, on one thread, is the reference.
  // Per-rank bandwidth S/t (NCCL's "algbw") cannot pass 2/N of it on 2 cores.
  sink.note(
      "bandwidth = bytes of all ranks' tensors / seconds per op, against memcpy of as many bytes on one "
      "thread; the note gives S/t per rank");
  for (int64_t mb : mbs) {
    const int64_t bytes = mb << 20, numel = bytes / 4;
    for (int64_t n : ranks) {
      const double copy = memcpy_seconds(n * numel, ctx.budget);
      const double s = in_process_seconds(n, numel, ctx.budget);
      BenchFigure f = figure(
          "allreduce", "in-process mean all-reduce, " + std::to_string(n) + " ranks x " + mb_label(bytes),
          double(n * bytes) / s / 1e9, "GB/s", "memcpy of " + mb_label(n * bytes), double(n * bytes) / copy / 1e9);
      f.note = "per rank " + std::to_string(double(bytes) / s / 1e9).substr(0, 5) + " GB/s, " +
               std::to_string(1e3 * s).substr(0, 5) + " ms per op";
      sink.add(with_target(f, ">=", 0.30));
    }
  }
}

void run_gloo(const Context& ctx, Sink& sink) {
  const std::vector<int64_t> mbs = ctx.opts.quick ? std::vector<int64_t>{4} : std::vector<int64_t>{1, 16, 64};
  DistOptions opts;
  opts.world_size = 2;
  opts.master_addr = "127.0.0.1";
  opts.master_port = pick_free_port(opts.master_addr);
  opts.timeout_s = 120;
  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) throw std::runtime_error("bench gloo: fork failed");
  opts.rank = child == 0 ? 1 : 0;
  std::vector<double> gloo;
  try {
    auto group = connect_gloo(opts, CollectiveAlgo::Ring);
    for (int64_t mb : mbs) gloo.push_back(gloo_seconds(*group, (mb << 20) / 4, ctx.budget));
    group->finish();
  } catch (const std::exception& e) {
    if (child == 0) {
      std::fprintf(stderr, "bench gloo, rank 1: %s\n", e.what());
      _exit(1);
    }
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    throw;
  }
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  sink.note("Gloo over TCP on 127.0.0.1, 2 processes; in-process: 2 threads; bandwidth = bytes / seconds per op");
  for (size_t i = 0; i < mbs.size(); ++i) {
    const int64_t bytes = mbs[i] << 20;
    const double in_process = in_process_seconds(2, bytes / 4, ctx.budget);
    sink.add(figure("gloo", "Gloo all-reduce, 2 processes, " + mb_label(bytes), double(bytes) / gloo[i] / 1e9, "GB/s",
                    "in-process all-reduce, 2 threads", double(bytes) / in_process / 1e9));
  }
}

}  // namespace atl::bench
