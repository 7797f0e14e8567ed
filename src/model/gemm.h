// Which library multiplies fp32 matrices (train.gemm): OpenBLAS, where
// LibTorch 1.13 sends them, or oneDNN's sgemm, from the libdnnl LibTorch
// loads, which is faster at most of a small GPT's shapes (docs/BENCHMARKS.md,
// third round). Each is deterministic run to run; they differ from each
// other in the last bits, so a run keeps one. The setting is process-wide,
// made once before any model runs, as the compute threads are.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace atl {

enum class Gemm { kOpenBlas, kOneDnn };

// "openblas" | "onednn" (the config's spelling). Throws std::runtime_error
// for onednn where LibTorch has not loaded oneDNN's sgemm.
void set_gemm(const std::string& name);
Gemm current_gemm();
bool onednn_sgemm_available();

// Whether a forward in `precision` sends its products to oneDNN (bf16 always
// does; fp32 with train.gemm = onednn): then ATen's thread pool, which
// oneDNN runs on, gets the compute threads (train/threads.h).
bool products_in_onednn(const std::string& precision);

// out (m, n) = a (m, k) times b (k, n) in oneDNN, fp32, 2-D: a and b may be
// transposed or strided views (a unit stride in one dimension, as BLAS
// needs); out needs a unit column stride.
void onednn_mm(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// out (G, m, n) = a (G, m, k) times b (G, k, n), each matrix as onednn_mm
// takes it, one after another on the calling thread (oneDNN uses ATen's
// threads within each).
void onednn_bmm(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b);

// x (..., in) times weight (out, in) transposed, plus bias (may be
// undefined): a Linear layer's forward in the chosen GEMM, differentiable.
// With OpenBLAS, under bf16 autocast or for other dtypes it is
// torch::nn::Linear's own forward, op for op.
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias);

}  // namespace atl
