// Which library multiplies fp32 matrices (train.gemm): OpenBLAS, where
// LibTorch 1.13 sends them; oneDNN's sgemm, from the libdnnl LibTorch loads,
// which is faster at most of a small GPT's shapes (docs/BENCHMARKS.md, third
// round); or, with auto, each shape in the one measured faster at it
// (model/gemm_routes.h). Each is deterministic run to run; they differ from
// each other in the last bits, so a run keeps its choice. The setting is
// process-wide, made once before any model runs, as the compute threads are.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "model/gemm_routes.h"

namespace atl {

enum class GemmMode { kOpenBlas, kOneDnn, kAuto };

// "openblas" | "onednn" | "auto" (the config's spelling); auto follows the
// routes set_gemm_routes gives (none at first: every shape in OpenBLAS). Throws
// std::runtime_error for onednn or auto where LibTorch has not loaded
// oneDNN's sgemm.
void set_gemm(const std::string& name);
GemmMode gemm_mode();
bool onednn_sgemm_available();

// train.gemm = auto: the library of each shape. A shape not in the routes
// (evaluation's, say) runs in OpenBLAS. Set before any model runs.
void set_gemm_routes(std::vector<GemmRoute> routes);
const std::vector<GemmRoute>& gemm_routes();

// The shapes of the products routed while a capture is open (any thread),
// in first-seen order; they run in OpenBLAS meanwhile. One capture at a time.
void start_product_capture();
std::vector<ProductShape> stop_product_capture();

// Whether a forward in `precision` sends products to oneDNN (bf16 always
// does; fp32 with train.gemm = onednn or auto): then ATen's thread pool,
// which oneDNN runs on, gets the compute threads (train/threads.h).
bool products_in_onednn(const std::string& precision);

// out (m, n) = a (m, k) times b (k, n) in oneDNN, fp32, 2-D: a and b may be
// transposed or strided views (a unit stride in one dimension, as BLAS
// needs); out needs a unit column stride.
void onednn_mm(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// out (G, m, n) = a (G, m, k) times b (G, k, n), each matrix as onednn_mm
// takes it, one after another on the calling thread (oneDNN uses ATen's
// threads within each).
void onednn_bmm(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// out (G, m, n) = a (G, m, k) times b (G, k, n), not differentiable, each
// matrix possibly a strided view as onednn_bmm takes it: fp32 in the
// library train.gemm picks for the shape, other dtypes in ATen
// (model/batched_matmul.h).
void bmm_into(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// The shape out (G, m, n) = a (G, m, k) b (G, k, n) has on this thread.
ProductShape product_shape(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// out = a b (3-D, fp32, layouts as onednn_bmm takes them) in `gemm`: with
// OpenBLAS a single product is at::mm_out and a batch bmm_into's OpenBLAS
// path. What auto runs and what it measures.
void product_in(Gemm gemm, const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// The best time in seconds of product_in at `shape` in each library
// (OpenBLAS first), on the calling thread's compute threads: `rounds` rounds
// of one run in each, after an untimed one. Alternating keeps a drift in the
// machine's speed from favouring the library timed second.
std::pair<double, double> time_product(const ProductShape& shape, int rounds);

// x (..., in) times weight (out, in) transposed, plus bias (may be
// undefined): a Linear layer's forward in the chosen GEMM, differentiable.
// With OpenBLAS, under bf16 autocast or for other dtypes it is
// torch::nn::Linear's own forward, op for op.
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace atl
