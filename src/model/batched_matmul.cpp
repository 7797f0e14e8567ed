#include "model/batched_matmul.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>
#include <dlfcn.h>

#include <thread>
#include <vector>

namespace atl {
namespace {

using GetThreads = int (*)();
using SetThreads = void (*)(int);

// One share of the batch. fp32 products write straight into a strided `out`
// (BLAS takes its row stride); other dtypes go to oneDNN or ATen's own loops,
// which are only relied on for dense outputs, so they land in a dense
// temporary first.
void bmm_share(at::Tensor out, const at::Tensor& a, const at::Tensor& b) {
  if (out.scalar_type() == at::kFloat || out.is_contiguous()) {
    at::bmm_out(out, a, b);
  } else {
    out.copy_(at::bmm(a, b));
  }
}

}  // namespace

int openblas_threads() {
  // Looked up at run time so that builds against other BLAS libraries link.
  static const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : 1;
}

void openblas_bmm_into(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  const int threads = openblas_threads();
  const int64_t batch = a.size(0);
  if (threads <= 1 || batch < 2 * threads) return bmm_share(out, a, b);
  static const auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  const bool inference = c10::InferenceMode::is_enabled();  // evaluation: `out` is an inference tensor
  auto share = [&](int t) {
    // New threads start with grad mode on and inference mode off; out= needs
    // the first off and, for an inference tensor, the second on.
    c10::InferenceMode same_mode(inference);
    at::NoGradGuard no_grad;
    const int64_t lo = batch * t / threads, hi = batch * (t + 1) / threads;
    bmm_share(out.narrow(0, lo, hi - lo), a.narrow(0, lo, hi - lo), b.narrow(0, lo, hi - lo));
  };
  set(1);
  std::vector<std::thread> helpers;
  for (int t = 1; t < threads; ++t) helpers.emplace_back(share, t);
  share(0);
  for (auto& h : helpers) h.join();
  set(threads);
}

}  // namespace atl
