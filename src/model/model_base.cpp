// Model's own methods (the interface in include/atoll/model.h); kept apart
// from make_model() so that a single model links without the others (the
// TorchScript fuzz target).
#include <stdexcept>

#include "atoll/model.h"

namespace atl {

int64_t Model::num_params() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

at::Tensor Model::next_token_logits(const at::Tensor&) {
  throw std::invalid_argument(
      "this model does not predict tokens: text comes from language models (model.kind = gpt, or a torchscript "
      "module whose forward(inputs) returns logits (B, T, vocabulary))");
}

Model::ExampleScores Model::example_scores(const at::Tensor& x, const at::Tensor& y) {
  return {example_losses(x, y), at::Tensor()};  // not a classifier unless the model says so
}

}  // namespace atl
