// Prints, from one run: the machine's fp32 GEMM rate (1024x1024 matmul), the
// default GPT's training throughput (tokens/s and model FLOP/s) and their
// ratio. A benchmark, not a test: figures only, no pass/fail.
//   build/bench_throughput [steps] [config overrides section.key=value ...]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "atoll/config.h"
#include "atoll/model.h"
#include "atoll/strategy.h"
#include "atoll/train.h"
#include "train/threads.h"

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double gemm_gflops(int64_t n, int reps) {
  at::Tensor a = at::randn({n, n}), b = at::randn({n, n}), c = at::empty({n, n});
  for (int i = 0; i < 3; ++i) at::mm_out(c, a, b);  // warm-up
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t = Clock::now();
    at::mm_out(c, a, b);
    best = std::min(best, since(t));
  }
  return 2.0 * double(n) * n * n / best / 1e9;
}
}  // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::stoi(argv[1]) : 20;
  std::vector<std::string> overrides(argv + std::min(argc, 2), argv + argc);
  atl::Config cfg = atl::load_config("", overrides);
  atl::tune_allocator();
  atl::set_compute_threads(atl::threads_per_worker(cfg.run.threads, 1));
  const double peak = gemm_gflops(1024, 20);
  std::printf("fp32 GEMM 1024x1024: %.1f GFLOP/s (%lld BLAS threads)\n", peak, (long long)atl::threads_per_worker(cfg.run.threads, 1));

  // The default GPT trained on random tokens: the same model, optimizer and
  // step as `atoll train`, without data loading or evaluation.
  const int64_t vocab = 85;
  auto model = atl::make_model(cfg.model, vocab, 1);
  atl::InProcessGroup group(1);
  auto strategy = atl::make_strategy(cfg, model->parameters(), group.rank(0));
  const int64_t B = cfg.train.batch_size, T = cfg.model.block_size;
  at::Tensor x = at::randint(vocab, {B, T}, at::kLong), y = at::randint(vocab, {B, T}, at::kLong);
  auto step = [&](int64_t t) {
    model->loss(x, y).backward();
    strategy->step(t, cfg.optim.lr);
  };
  // Run the steps on a worker thread, as simulate() does: the allocator and
  // thread pools behave differently off the main thread.
  double secs = 0;
  std::thread worker([&] {
    atl::set_compute_threads(atl::threads_per_worker(cfg.run.threads, 1));
    for (int t = 0; t < 3; ++t) step(t);
    auto t0 = Clock::now();
    for (int t = 0; t < steps; ++t) step(t);
    secs = since(t0);
  });
  worker.join();
  const double tok_s = double(steps * B * T) / secs;
  const double flops = tok_s * model->flops_per_token();
  std::printf("default GPT (%lld params, batch %lld x %lld): %.0f tokens/s, %.1f GFLOP/s model FLOPs, %.1f ms/step\n",
              (long long)model->num_params(), (long long)B, (long long)T, tok_s, flops / 1e9, 1e3 * secs / steps);
  std::printf("ratio model FLOP/s / GEMM FLOP/s: %.3f (target >= 0.40)\n", flops / 1e9 / peak);
  return 0;
}
