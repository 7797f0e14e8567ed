#include "train/gemm_choice.h"

#include <ATen/core/grad_mode.h>

#include <thread>
#include <tuple>

#include "model/dry_pass.h"
#include "model/gemm.h"
#include "train/gradients.h"
#include "train/threads.h"

namespace atl {
namespace {

// Each shape's time in each library is the best of this many runs: enough
// to see through a descheduled run, few enough that a default GPT's ~20
// shapes take about a second.
constexpr int kRounds = 5;

}  // namespace

std::vector<GemmRoute> measure_gemm_routes(Model& model, const std::vector<at::Tensor>& params,
                                           const std::pair<at::Tensor, at::Tensor>& batch, const std::string& precision,
                                           int64_t micro, int64_t threads) {
  set_compute_threads(threads, products_in_onednn(precision));
  // The pass accumulates gradients: they go back to what they were.
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params) grads.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
  std::vector<ProductShape> shapes;
  {
    DryPass pass(model);
    model.train(true);
    start_product_capture();
    try {
      forward_backward(model, params, batch, precision, micro);
    } catch (...) {
      stop_product_capture();
      throw;
    }
    shapes = stop_product_capture();
  }
  for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i];
  std::vector<GemmRoute> routes;
  for (const ProductShape& s : shapes) {
    GemmRoute r;
    r.shape = s;
    // On a thread of its own with the shape's compute threads, as it runs.
    std::thread([&] {
      at::NoGradGuard no_grad;
      set_compute_threads(s.threads, /*onednn_products=*/true);
      std::tie(r.openblas_seconds, r.onednn_seconds) = time_product(s, kRounds);
    }).join();
    r.gemm = faster_gemm(r.openblas_seconds, r.onednn_seconds);
    routes.push_back(r);
  }
  return routes;
}

}  // namespace atl
