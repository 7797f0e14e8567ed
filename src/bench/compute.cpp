// compute: the machine's fp32 GEMM rate and the default GPT's training rate
// in model FLOP/s, as one worker on every core and as one single-threaded
// worker per core (the layout of an N-worker simulation).
#include <ATen/ATen.h>

#include <thread>

#include "atoll/comm.h"
#include "atoll/model.h"
#include "atoll/strategy.h"
#include "bench/measure.h"
#include "model/precision.h"
#include "train/gradients.h"
#include "train/threads.h"

namespace atl::bench {
namespace {

// GFLOP/s of an n x n x n matmul of `dtype` with `threads` BLAS threads
// (bf16 products go to oneDNN, which takes ATen's thread count).
double gemm_gflops(int64_t n, int64_t threads, double budget, at::ScalarType dtype = at::kFloat) {
  double seconds = 0;
  std::thread([&] {
    set_compute_threads(threads, dtype != at::kFloat);
    at::Tensor a = at::randn({n, n}).to(dtype), b = at::randn({n, n}).to(dtype), c = at::empty({n, n}, dtype);
    seconds = best_seconds([&] { at::mm_out(c, a, b); }, budget, 5);
  }).join();
  return 2.0 * double(n) * double(n) * double(n) / seconds / 1e9;
}

// Training steps (forward, backward, strategy "single": clip + AdamW) of the
// configured model on random tokens, `workers` of them side by side, each on
// its own thread with `threads` BLAS threads. Returns model FLOP/s of all.
double training_flops(const Config& cfg, int64_t workers, int64_t threads, int steps) {
  const std::string precision = resolve_precision(cfg.train.precision);
  double flops_per_token = 0;
  std::vector<double> seconds(static_cast<size_t>(workers), 0);
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      set_compute_threads(threads, precision == "bf16");
      Config one = cfg;
      one.strategy.name = "single";
      one.strategy.workers = 1;
      auto model = make_model(cfg.model, kBenchVocab, 1);
      flops_per_token = model->flops_per_token();
      InProcessGroup group(1);
      auto strategy = make_strategy(one, model->parameters(), group.rank(0));
      const int64_t B = cfg.train.batch_size, T = model->tokens_per_example();
      at::Tensor x = at::randint(kBenchVocab, {B, T}, at::kLong), y = at::randint(kBenchVocab, {B, T}, at::kLong);
      const std::vector<at::Tensor> params = model->parameters();
      const int64_t micro = micro_batches(cfg.model, B, threads);
      auto step = [&](int t) {  // as the driver's worker loop does it
        forward_backward(*model, params, {x, y}, precision, micro);
        strategy->step(t, cfg.optim.lr);
      };
      for (int t = 0; t < 2; ++t) step(t);  // warm-up: allocator and BLAS buffers
      const auto t0 = Clock::now();
      for (int t = 0; t < steps; ++t) step(t);
      seconds[static_cast<size_t>(w)] = since(t0);
    });
  }
  for (auto& t : pool) t.join();
  double tokens_per_s = 0;
  const double tokens = double(steps) * double(cfg.train.batch_size) * double(cfg.model.block_size);
  for (double s : seconds) tokens_per_s += tokens / s;
  return tokens_per_s * flops_per_token;
}

}  // namespace

void run_compute(const Context& ctx, Sink& sink) {
  if (ctx.cfg.model.kind != "gpt") throw std::invalid_argument("bench compute: needs model.kind = gpt");
  const int64_t cores = ctx.cores;
  const std::string all = std::to_string(cores) + " thread" + (cores > 1 ? "s" : "");
  const double gemm_all = gemm_gflops(1024, cores, ctx.budget);
  const double gemm_one = gemm_gflops(1024, 1, ctx.budget);
  sink.add(figure("compute", "fp32 GEMM 1024^3, " + all, gemm_all, "GFLOP/s"));
  sink.add(figure("compute", "fp32 GEMM 1024^3, 1 thread", gemm_one, "GFLOP/s"));

  const int steps = ctx.opts.quick ? 4 : 12;
  // Each layout against the GEMM rate of the same threads.
  auto layouts = [&](const Config& cfg, const std::string& kind, double rate_all, double rate_one) {
    const double one_worker = training_flops(cfg, 1, cores, steps) / 1e9;
    BenchFigure f = figure("compute", "default GPT training " + kind + ", 1 worker x " + all, one_worker,
                           "GFLOP/s (model)", kind + " GEMM, " + all, rate_all);
    sink.add(with_target(f, ">=", 0.70));
    if (cores > 1) {
      const double per_core = training_flops(cfg, cores, 1, steps) / 1e9;
      BenchFigure g = figure(
          "compute", "default GPT training " + kind + ", " + std::to_string(cores) + " workers x 1 thread", per_core,
          "GFLOP/s (model)", std::to_string(cores) + " x " + kind + " GEMM, 1 thread", double(cores) * rate_one);
      g.note = "the layout of an N-worker simulation";
      sink.add(with_target(g, ">=", 0.70));
    }
    return one_worker;
  };
  const double fp32_rate = layouts(ctx.cfg, "fp32", gemm_all, gemm_one);

  const std::string no_bf16 = bf16_unavailable_reason(this_cpu_bf16_features());
  if (!no_bf16.empty()) {
    sink.note("bf16 figures skipped: " + no_bf16);
    return;
  }
  const double bf16_all = gemm_gflops(1024, cores, ctx.budget, at::kBFloat16);
  const double bf16_one = gemm_gflops(1024, 1, ctx.budget, at::kBFloat16);
  sink.add(figure("compute", "bf16 GEMM 1024^3, " + all, bf16_all, "GFLOP/s", "fp32 GEMM, " + all, gemm_all));
  sink.add(figure("compute", "bf16 GEMM 1024^3, 1 thread", bf16_one, "GFLOP/s", "fp32 GEMM, 1 thread", gemm_one));
  Config bf16 = ctx.cfg;
  bf16.train.precision = "bf16";
  const double bf16_rate = layouts(bf16, "bf16", bf16_all, bf16_one);
  sink.add(figure("compute", "default GPT training, bf16 against fp32, 1 worker x " + all, bf16_rate, "GFLOP/s (model)",
                  "fp32 training, same layout", fp32_rate));
}

}  // namespace atl::bench
