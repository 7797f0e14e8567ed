// The fp32 products of one default-GPT training step, shape by shape, in
// both GEMMs the machine has: OpenBLAS (where LibTorch 1.13 sends fp32
// products) and oneDNN's sgemm (in the libdnnl LibTorch loads). train.gemm
// sends every product to one of them; the per-shape total says what a
// choice per shape would gain.
#include <ATen/ATen.h>
#include <dlfcn.h>

#include <cstdio>
#include <thread>
#include <vector>

#include "bench/measure.h"
#include "train/threads.h"

namespace atl::bench {
namespace {

// oneDNN's C API: row-major C = alpha op(A) op(B) + beta C.
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);

struct Shape {
  const char* what;
  int64_t m, n, k;
  int64_t per_step;  // how many such products one step runs
};

// One worker's products at batch rows x block tokens: per layer the four
// linears forward (x W^T), their input gradients and their weight
// gradients, and attention's six per-head products per sequence.
std::vector<Shape> step_shapes(const ModelConfig& m, int64_t rows) {
  const int64_t C = m.n_embd, T = m.block_size, BT = rows * T, hs = C / m.n_head, L = m.n_layer;
  const int64_t heads = rows * m.n_head;
  return {{"c_attn forward", BT, 3 * C, C, L},
          {"attn_proj forward", BT, C, C, L},
          {"c_fc forward", BT, 4 * C, C, L},
          {"mlp_proj forward", BT, C, 4 * C, L},
          {"c_attn input grad", BT, C, 3 * C, L},
          {"c_fc input grad", BT, C, 4 * C, L},
          {"mlp_proj input grad", BT, 4 * C, C, L},
          {"attn_proj input grad", BT, C, C, L},
          {"c_attn weight grad", 3 * C, C, BT, L},
          {"c_fc weight grad", 4 * C, C, BT, L},
          {"mlp_proj weight grad", C, 4 * C, BT, L},
          {"attn_proj weight grad", C, C, BT, L},
          {"attention scores (q k^T, dS K, dS^T Q)", T, T, hs, 3 * heads * L},
          {"attention P V (and dP, dV)", T, hs, T, 3 * heads * L}};
}

}  // namespace

void run_gemm_shapes(const Context& ctx, Sink& sink) {
  static const auto dnnl = reinterpret_cast<DnnlSgemm>(dlsym(RTLD_DEFAULT, "dnnl_sgemm"));
  if (dnnl == nullptr) {
    sink.note("oneDNN's sgemm is not loaded: per-shape comparison skipped");
    return;
  }
  // The layout of a simulation: each worker's whole batch on one thread.
  const std::vector<Shape> shapes = step_shapes(ctx.cfg.model, ctx.cfg.train.batch_size);
  double openblas_total = 0, onednn_total = 0, best_total = 0;
  std::thread([&] {
    set_compute_threads(1, /*onednn_products=*/false);
    for (const Shape& s : shapes) {
      const at::Tensor a = at::randn({s.m, s.k}), b = at::randn({s.k, s.n});
      at::Tensor c = at::empty({s.m, s.n});
      const double openblas = best_seconds([&] { at::mm_out(c, a, b); }, ctx.budget / 4, 5);
      const double onednn = best_seconds(
          [&] {
            dnnl('N', 'N', s.m, s.n, s.k, 1.f, a.data_ptr<float>(), s.k, b.data_ptr<float>(), s.n, 0.f,
                 c.data_ptr<float>(), s.n);
          },
          ctx.budget / 4, 5);
      const double flops = 2.0 * double(s.m) * double(s.n) * double(s.k);
      char name[160];
      std::snprintf(name, sizeof name, "fp32 %s, %lld x %lld x %lld, oneDNN", s.what, static_cast<long long>(s.m),
                    static_cast<long long>(s.n), static_cast<long long>(s.k));
      sink.add(figure("compute", name, flops / onednn / 1e9, "GFLOP/s", "OpenBLAS, 1 thread", flops / openblas / 1e9));
      openblas_total += openblas * double(s.per_step);
      onednn_total += onednn * double(s.per_step);
      best_total += std::min(openblas, onednn) * double(s.per_step);
    }
  }).join();
  sink.add(figure("compute", "fp32 products of one step (1 worker, 1 thread), each shape in its faster GEMM",
                  1e3 * best_total, "ms", "all in OpenBLAS", 1e3 * openblas_total));
  sink.add(figure("compute", "fp32 products of one step (1 worker, 1 thread), all in oneDNN", 1e3 * onednn_total, "ms",
                  "all in OpenBLAS", 1e3 * openblas_total));
  sink.note(
      "train.gemm picks one library for every fp32 product; the first figure is what a per-shape choice would give");
}

}  // namespace atl::bench
