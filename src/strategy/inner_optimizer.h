// The per-worker inner optimizer: gradient clipping, then AdamW (weight decay
// on matrices only, nanoGPT-style) or plain SGD. Its state is private to the
// worker and is never reset or averaged by DiLoCo-family methods.
//
// AdamW runs on flat buffers: the gradients are views of one buffer (adopted
// at the first step: autograd then accumulates into them in place), and the
// moments are two more, so a step is a dozen whole-model operations plus two
// per parameter instead of about fifteen per parameter. For a small model
// the per-operation overhead is most of a step (a 2 x 64 GPT spends ~5 ms of
// its 15 ms in it). Every operation is LibTorch's AdamW's, element for
// element, so the trajectory is the same to the bit
// (InnerOptimizer.FlatAdamWEqualsLibTorchsAdamWToTheBit).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
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
  // Checkpoints: AdamW's per-parameter step count and moments (SGD keeps none).
  void visit_state(StateVisitor& v);

 private:
  bool adopt_gradients();  // false if a parameter has no gradient this step
  void adamw_flat(double lr);
  void adamw_each(double lr);  // per parameter: some were skipped (no gradient)

  OptimConfig cfg_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> sgd_;  // cfg.name == "sgd"
  // AdamW. Flat buffers in parameter order; *_views_[i] is parameter i's
  // part, shaped like it.
  at::Tensor grads_, exp_avg_, exp_avg_sq_, denom_;
  std::vector<at::Tensor> grad_views_, exp_avg_views_, exp_avg_sq_views_, denom_views_;
  std::vector<int64_t> steps_;  // per parameter, as LibTorch counts them (a step without a gradient is skipped)
  std::vector<bool> decays_;    // weight decay: matrices only
};

}  // namespace atl
