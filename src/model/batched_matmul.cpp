#include "model/batched_matmul.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/InferenceMode.h>
#include <dlfcn.h>
#include <torch/autograd.h>

#include <thread>
#include <vector>

namespace atl {
namespace {

using GetThreads = int (*)();
using SetThreads = void (*)(int);

// OpenBLAS's thread count, looked up at run time (1 without OpenBLAS).
int blas_threads() {
  static const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : 1;
}

// The forward and backward products. With several BLAS threads (a lone
// worker on every core) each thread takes a contiguous share of the batch
// and OpenBLAS runs single-threaded meanwhile; simulated workers have one
// thread each and go straight to at::bmm.
at::Tensor split_bmm(const at::Tensor& a, const at::Tensor& b) {
  const int threads = blas_threads();
  const int64_t batch = a.size(0);
  if (threads <= 1 || batch < 2 * threads) return at::bmm(a, b);
  static const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  at::Tensor out = at::empty({batch, a.size(1), b.size(2)}, a.options());
  const bool inference = c10::InferenceMode::is_enabled();  // evaluation: `out` is an inference tensor
  auto share = [&](int t) {
    // New threads start with grad mode on and inference mode off; out= needs
    // the first off and, for an inference tensor, the second on.
    c10::InferenceMode same_mode(inference);
    at::NoGradGuard no_grad;
    const int64_t lo = batch * t / threads, hi = batch * (t + 1) / threads;
    at::Tensor part = out.narrow(0, lo, hi - lo);
    at::bmm_out(part, a.narrow(0, lo, hi - lo), b.narrow(0, lo, hi - lo));
  };
  set(1);
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(share, t);
  share(0);
  for (auto& h : helpers) h.join();
  set(threads);
  return out;
}

struct BatchedMatmul : torch::autograd::Function<BatchedMatmul> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    ctx->save_for_backward({a, b});
    return split_bmm(a, b);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& a = saved[0];
    const at::Tensor& b = saved[1];
    const at::Tensor g = grads[0];
    // As bmm's own backward: dA = dC B^T, dB = A^T dC.
    return {split_bmm(g, b.transpose(1, 2)), split_bmm(a.transpose(1, 2), g)};
  }
};

}  // namespace

at::Tensor batched_matmul(const at::Tensor& a, const at::Tensor& b) {
  // Under autocast (train.precision = bf16) the product is a matmul like
  // any other: bf16 operands in, bf16 out. Cast here, as autocast's own
  // wrapper would for at::bmm, so the helper threads (which do not inherit
  // autocast) and the backward see one dtype; the casts' own backward
  // returns fp32 gradients to the fp32 inputs.
  if (at::autocast::is_cpu_enabled()) {
    const at::ScalarType low = at::autocast::get_autocast_cpu_dtype();
    return BatchedMatmul::apply(a.to(low), b.to(low));
  }
  return BatchedMatmul::apply(a, b);
}

}  // namespace atl
