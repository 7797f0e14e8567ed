// Payload codec throughput (encode + decode round trip, GB/s of fp32 input)
// against a plain copy of the same bytes, and DeMo's per-step compression
// cost against the default GPT's training step. A benchmark, not a test:
// figures only, no pass/fail.
//   build/bench_codecs [elements] [config overrides section.key=value ...]
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "atoll/comm.h"
#include "atoll/config.h"
#include "atoll/model.h"
#include "atoll/strategy.h"
#include "strategy/codec.h"
#include "train/threads.h"

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Best of `reps` timings of fn().
template <typename F>
double best_of(int reps, F&& fn) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t = Clock::now();
    fn();
    best = std::min(best, since(t));
  }
  return best;
}

// Mean time of one training step of `strategy_name` on the default GPT, one
// worker thread with the threads a worker gets among `workers`: the whole
// step, and the strategy's update alone (after backward).
struct StepTime {
  double total = 0, update = 0;
};
StepTime step_seconds(atl::Config cfg, const std::string& strategy_name, int steps) {
  cfg.strategy.name = strategy_name;
  StepTime out;
  std::thread([&] {
    atl::set_compute_threads(atl::threads_per_worker(cfg.run.threads, cfg.strategy.workers));
    const int64_t vocab = 85;
    auto model = atl::make_model(cfg.model, vocab, 1);
    atl::InProcessGroup group(1);
    atl::Config one = cfg;
    one.strategy.workers = 1;
    auto strategy = atl::make_strategy(one, model->parameters(), group.rank(0));
    const int64_t B = cfg.train.batch_size, T = cfg.model.block_size;
    at::Tensor x = at::randint(vocab, {B, T}, at::kLong), y = at::randint(vocab, {B, T}, at::kLong);
    for (int t = 0; t < 2; ++t) {
      model->loss(x, y).backward();
      strategy->step(t, 1e-3);
    }
    const auto t0 = Clock::now();
    for (int t = 0; t < steps; ++t) {
      model->loss(x, y).backward();
      const auto u0 = Clock::now();
      strategy->step(t, 1e-3);
      out.update += since(u0) / steps;
    }
    out.total = since(t0) / steps;
  }).join();
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::stoll(argv[1]) : (int64_t(1) << 22);
  std::vector<std::string> overrides(argv + std::min(argc, 2), argv + argc);
  atl::Config cfg = atl::load_config("", overrides);
  atl::tune_allocator();
  atl::set_compute_threads(1);

  at::Tensor x = at::randn({n});
  at::Tensor copy = at::empty_like(x);
  const double gb = double(n) * 4 / 1e9;
  const double copy_s = best_of(5, [&] { copy.copy_(x); });
  std::printf("payload: %lld fp32 elements (%.1f MB), 1 thread\n", (long long)n, gb * 1e3);
  std::printf("%-10s %10.2f GB/s  (reference: plain copy)\n", "copy", gb / copy_s);
  for (const auto& name : atl::codec_names()) {
    if (name == "fp4") continue;  // the same codec as fp4-e3m0
    auto codec = atl::make_codec(name, cfg.codec.block, cfg.codec.topk_density);
    double bytes = 0;
    const double s = best_of(3, [&] { bytes = codec->round_trip(x).bytes; });
    std::printf("%-10s %10.3f GB/s  %.4f x copy  %.3f bytes/element on the wire\n", name.c_str(), gb / s,
                copy_s / s, bytes / double(n));
  }

  // DeMo's overhead: its step against plain local AdamW on the same model.
  cfg.strategy.workers = 4;  // one thread per worker, as in a 4-worker simulation
  const int steps = 8;
  const StepTime adamw = step_seconds(cfg, "single", steps);
  const StepTime demo = step_seconds(cfg, "demo", steps);
  std::printf("default GPT step, one worker thread: local AdamW %.1f ms (update %.1f ms), DeMo %.1f ms "
              "(update %.1f ms; N = 1: no peers)\n",
              1e3 * adamw.total, 1e3 * adamw.update, 1e3 * demo.total, 1e3 * demo.update);
  std::printf("DeMo update (clip, DCT, top-k, decode, sign step) over the AdamW update: %.1f ms = %.3f of the "
              "AdamW step\n",
              1e3 * (demo.update - adamw.update), (demo.update - adamw.update) / adamw.total);
  return 0;
}
