// The per-worker inner optimizer: gradient clipping, then AdamW (weight decay
// on matrices only, nanoGPT-style) or plain SGD. Its state is private to the
// worker and is never reset or averaged by DiLoCo-family methods.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "atoll/config.h"
#include "atoll/state.h"

namespace torch {
namespace optim {
class Optimizer;
}
}  // namespace torch

namespace atl {

// Scales the gradients so their global norm is at most max_norm (no-op for
// max_norm <= 0). Used by the inner optimizer and by DeMo, which has none.
void clip_gradients(const std::vector<at::Tensor>& params, double max_norm);

class InnerOptimizer {
 public:
  InnerOptimizer(const OptimConfig& cfg, const std::vector<at::Tensor>& params);
  ~InnerOptimizer();
  // Clips the global gradient norm to cfg.grad_clip (if > 0), then steps
  // with learning rate `lr`, then zeroes the gradients.
  void step(double lr);
  torch::optim::Optimizer& optimizer() { return *opt_; }
  // Checkpoints: AdamW's per-parameter step count and moments (SGD keeps none).
  void visit_state(StateVisitor& v);

 private:
  OptimConfig cfg_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> opt_;
};

}  // namespace atl
