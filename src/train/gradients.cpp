#include "train/gradients.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <exception>
#include <thread>

#include "model/gemm.h"
#include "model/precision.h"
#include "train/threads.h"

namespace atl {

int64_t micro_batches(const ModelConfig& model, int64_t rows, int64_t threads) {
  if (threads <= 1 || model.kind == "torchscript" || model.dropout > 0) return 1;
  return std::min(threads, rows);
}

at::Tensor forward_backward(Model& model, const std::vector<at::Tensor>& params,
                            const std::pair<at::Tensor, at::Tensor>& batch, const std::string& precision,
                            int64_t micro) {
  if (micro <= 1) {
    at::Tensor loss;
    {
      Bf16Forward scope(precision);  // the forward only: backward follows its casts
      loss = model.loss(batch.first, batch.second);
    }
    loss.backward();
    return loss;
  }
  const int64_t rows = batch.first.size(0);
  std::vector<at::Tensor> losses(static_cast<size_t>(micro));
  std::vector<std::vector<at::Tensor>> grads(static_cast<size_t>(micro));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(micro));
  auto part = [&](int64_t m) {
    try {
      set_compute_threads(1, products_in_onednn(precision));
      const int64_t lo = rows * m / micro, hi = rows * (m + 1) / micro;
      at::Tensor loss;
      {
        Bf16Forward scope(precision);
        loss = model.loss(batch.first.narrow(0, lo, hi - lo), batch.second.narrow(0, lo, hi - lo));
      }
      // Weighted by its share of the batch: the sum is the batch's mean.
      loss = loss * (double(hi - lo) / double(rows));
      grads[size_t(m)] = torch::autograd::grad({loss}, params, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                               /*create_graph=*/false, /*allow_unused=*/true);
      losses[size_t(m)] = loss.detach();
    } catch (...) {
      errors[size_t(m)] = std::current_exception();
    }
  };
  const int64_t caller_threads = compute_threads();
  std::vector<std::thread> helpers;
  for (int64_t m = 1; m < micro; ++m) helpers.emplace_back(part, m);
  part(0);
  for (auto& h : helpers) h.join();
  set_compute_threads(caller_threads, products_in_onednn(precision));
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  // In micro-batch order, as backward would have accumulated them.
  at::NoGradGuard no_grad;
  at::Tensor total = losses[0];
  for (int64_t m = 0; m < micro; ++m) {
    if (m > 0) total = total + losses[size_t(m)];
    for (size_t k = 0; k < params.size(); ++k) {
      const at::Tensor& g = grads[size_t(m)][k];
      if (!g.defined()) continue;
      at::Tensor p = params[k];
      if (p.grad().defined()) {
        p.mutable_grad().add_(g);
      } else {
        // A copy: autograd may hand back a view (of an expand, say), and
        // optimizers' zero_grad refuses to detach a view in place.
        p.mutable_grad() = g.clone(at::MemoryFormat::Contiguous);
      }
    }
  }
  return total;
}

}  // namespace atl
