#include "train/evaluation.h"

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace atl {

EvalResult summarize_example_losses(const std::vector<double>& losses, int64_t tokens_per_example) {
  EvalResult r;
  const int64_t n = static_cast<int64_t>(losses.size());
  r.examples = n;
  r.tokens = n * tokens_per_example;
  if (n == 0) return r;
  // Two passes: the mean first, then squared deviations from it, so a
  // small spread around a large mean loses no digits.
  double sum = 0;
  for (double l : losses) sum += l;
  r.loss = sum / double(n);
  if (n < 2) return r;
  double squares = 0;
  for (double l : losses) squares += (l - r.loss) * (l - r.loss);
  r.se = std::sqrt(squares / double(n - 1)) / std::sqrt(double(n));
  return r;
}

EvalResult evaluate_batches(Model& model, const BatchSource& next, std::vector<double>* per_example) {
  // No graph is built: evaluation keeps no activations for a backward pass
  // and leaves the parameters' gradients as they were.
  at::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  std::vector<double> losses;
  std::pair<at::Tensor, at::Tensor> batch;
  while (next(batch)) {
    const at::Tensor l = model.example_losses(batch.first, batch.second).to(at::kDouble).contiguous();  // (B)
    if (l.dim() != 1 || l.size(0) != batch.first.size(0))
      throw std::logic_error("example_losses returned " + std::to_string(l.numel()) + " values for a batch of " +
                             std::to_string(batch.first.size(0)));
    const double* p = l.data_ptr<double>();
    losses.insert(losses.end(), p, p + l.numel());
  }
  model.train(was_training);
  EvalResult r = summarize_example_losses(losses, model.tokens_per_example());
  if (per_example) *per_example = std::move(losses);
  return r;
}

}  // namespace atl
