// compute: the machine's GEMM rates (fp32 in OpenBLAS and in oneDNN; bf16
// where native) and the default GPT's training rate in model FLOP/s, as one
// worker on every core and as one single-threaded worker per core (the
// layout of an N-worker simulation), each against the best GEMM rate of its
// dtype and threads (issue 32's targets: 0.80 fp32, 0.70 bf16).
#include <ATen/ATen.h>

#include <algorithm>
#include <thread>

#include "bench/measure.h"
#include "bench/training_step.h"
#include "model/gemm.h"
#include "model/precision.h"
#include "train/threads.h"

namespace atl::bench {
namespace {

// GFLOP/s of an n x n x n product, timed on a thread of its own with
// `threads` compute threads (`onednn`: on ATen's pool, which oneDNN uses).
// `make` runs on that thread and returns the product to time.
template <class Make>
double product_gflops(int64_t n, int64_t threads, bool onednn, double budget, Make make) {
  double seconds = 0;
  std::thread([&] {
    set_compute_threads(threads, onednn);
    auto product = make();
    seconds = best_seconds(product, budget, 5);
  }).join();
  return 2.0 * double(n) * double(n) * double(n) / seconds / 1e9;
}

// at::mm of `dtype`: fp32 goes to OpenBLAS, bf16 to oneDNN.
double gemm_gflops(int64_t n, int64_t threads, double budget, at::ScalarType dtype = at::kFloat) {
  return product_gflops(n, threads, dtype != at::kFloat, budget, [&] {
    at::Tensor a = at::randn({n, n}).to(dtype), b = at::randn({n, n}).to(dtype), c = at::empty({n, n}, dtype);
    return [a, b, c]() mutable { at::mm_out(c, a, b); };
  });
}

// oneDNN's fp32 product (the oneDNN inside LibTorch, through mkldnn_linear
// on oneDNN-layout tensors; the conversions are outside the timing), or 0
// where LibTorch has no oneDNN: the other fp32 GEMM the machine has.
double onednn_fp32_gemm_gflops(int64_t n, int64_t threads, double budget) {
  if (!at::hasMKLDNN()) return 0;
  return product_gflops(n, threads, /*onednn=*/true, budget, [&] {
    const at::Tensor a = at::randn({n, n}).to_mkldnn(), w = at::randn({n, n}).to_mkldnn();
    return [a, w] { at::mkldnn_linear(a, w); };
  });
}

// Training steps of the configured model on random tokens, `workers` of
// them side by side, each on its own thread with `threads` compute threads.
// Returns model FLOP/s of all. With train.gemm = auto, `routes` gets what
// the routes chose.
double training_flops(const Config& cfg, int64_t workers, int64_t threads, int steps, std::string* routes = nullptr) {
  std::vector<double> tokens_per_s(static_cast<size_t>(workers), 0);
  double flops_per_token = 0;
  // train.gemm = auto: the routes of a worker's step, measured before any
  // worker runs (as a run does), on one worker's threads.
  if (cfg.train.gemm == "auto") {
    std::thread([&] { TrainingStep(cfg, threads).route_products(); }).join();
    if (routes) *routes = describe_routes(gemm_routes());
  }
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      TrainingStep step(cfg, threads);
      flops_per_token = step.flops_per_token();
      for (int t = 0; t < 2; ++t) step.run(t);  // warm-up: allocator and BLAS buffers
      const auto t0 = Clock::now();
      for (int t = 0; t < steps; ++t) step.run(t);
      tokens_per_s[static_cast<size_t>(w)] = double(steps) * step.tokens_per_step() / since(t0);
    });
  }
  for (auto& t : pool) t.join();
  double total = 0;
  for (double r : tokens_per_s) total += r;
  return total * flops_per_token;
}

}  // namespace

void run_compute(const Context& ctx, Sink& sink) {
  if (ctx.cfg.model.kind != "gpt") throw std::invalid_argument("bench compute: needs model.kind = gpt");
  const int64_t cores = ctx.cores;
  const std::string all = std::to_string(cores) + " thread" + (cores > 1 ? "s" : "");
  const double openblas_all = gemm_gflops(1024, cores, ctx.budget);
  const double openblas_one = gemm_gflops(1024, 1, ctx.budget);
  sink.add(figure("compute", "fp32 GEMM 1024^3 (OpenBLAS), " + all, openblas_all, "GFLOP/s"));
  sink.add(figure("compute", "fp32 GEMM 1024^3 (OpenBLAS), 1 thread", openblas_one, "GFLOP/s"));
  const double onednn_all = onednn_fp32_gemm_gflops(1024, cores, ctx.budget);
  const double onednn_one = onednn_fp32_gemm_gflops(1024, 1, ctx.budget);
  if (onednn_all > 0) {
    sink.add(figure("compute", "fp32 GEMM 1024^3 (oneDNN), " + all, onednn_all, "GFLOP/s", "OpenBLAS, " + all,
                    openblas_all));
    sink.add(figure("compute", "fp32 GEMM 1024^3 (oneDNN), 1 thread", onednn_one, "GFLOP/s", "OpenBLAS, 1 thread",
                    openblas_one));
  }
  // Training is measured against the best fp32 GEMM the machine has, which
  // may not be the one training uses (OpenBLAS, in LibTorch 1.13).
  const double gemm_all = std::max(openblas_all, onednn_all), gemm_one = std::max(openblas_one, onednn_one);
  sink.note(std::string("best fp32 GEMM: ") + (onednn_all > openblas_all ? "oneDNN" : "OpenBLAS") + " on " + all +
            ", " + (onednn_one > openblas_one ? "oneDNN" : "OpenBLAS") + " on 1 thread");

  const int steps = ctx.opts.quick ? 4 : 12;
  // Each layout against the best GEMM rate of its dtype and the same threads;
  // `label` names the run ("fp32", "fp32 (oneDNN products)", "bf16").
  auto layouts = [&](const Config& cfg, const std::string& label, double rate_all, double rate_one) {
    const std::string dtype = resolve_precision(cfg.train.precision);
    const double target = dtype == "bf16" ? 0.70 : 0.80;
    std::string routes;
    const double one_worker = training_flops(cfg, 1, cores, steps, &routes) / 1e9;
    BenchFigure f = figure("compute", "default GPT training " + label + ", 1 worker x " + all, one_worker,
                           "GFLOP/s (model)", "best " + dtype + " GEMM, " + all, rate_all);
    f.note = routes;
    sink.add(with_target(f, ">=", target));
    if (cores > 1) {
      const double per_core = training_flops(cfg, cores, 1, steps, &routes) / 1e9;
      BenchFigure g = figure(
          "compute", "default GPT training " + label + ", " + std::to_string(cores) + " workers x 1 thread", per_core,
          "GFLOP/s (model)", std::to_string(cores) + " x best " + dtype + " GEMM, 1 thread", double(cores) * rate_one);
      g.note = "the layout of an N-worker simulation" + (routes.empty() ? "" : "; " + routes);
      sink.add(with_target(g, ">=", target));
    }
    return one_worker;
  };
  Config openblas = ctx.cfg;
  openblas.train.precision = "fp32";
  openblas.train.gemm = "openblas";
  const double fp32_rate = layouts(openblas, "fp32", gemm_all, gemm_one);
  if (onednn_sgemm_available()) {  // the same steps with every fp32 product in oneDNN (train.gemm = onednn)
    Config onednn = openblas;
    onednn.train.gemm = "onednn";
    layouts(onednn, "fp32 (oneDNN products)", gemm_all, gemm_one);
    Config routed = openblas;  // each product shape in the library measured faster at it
    routed.train.gemm = "auto";
    layouts(routed, "fp32 (each shape in its faster GEMM)", gemm_all, gemm_one);
    set_gemm(ctx.cfg.train.gemm);  // the training steps set it process-wide: back to the config's for later groups
  }
  run_gemm_shapes(ctx, sink);

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
