// The per-worker inner optimizer: gradient clipping, then AdamW (weight decay
// on matrices only, nanoGPT-style), Muon (MuLoCo's: matrices on Muon, the
// rest on AdamW) or plain SGD. Its state is private to the worker and is
// never reset or averaged by DiLoCo-family methods.
//
// Muon (optim.name = muon; Jordan et al. 2024, ALGORITHMS.md 8.8), for each
// matrix not named by optim.muon_exclude (a conv weight counts as its
// (out, rest) matrix):
//   m <- mu m + g;  u = g + mu m (Nesterov) or m
//   O = NewtonSchulz(u): X = u / (|u|_F + 1e-7), transposed when rows > cols,
//       muon_ns_steps times X <- a X + (b A + c A A) X with A = X X^T,
//       (a, b, c) = (3.4445, -4.7750, 2.0315)
//   p <- p (1 - lr wd);  p <- p - lr 0.2 sqrt(max(rows, cols)) O
// The 0.2 sqrt(max(rows, cols)) scale is Moonlight's (Liu et al. 2025): it
// gives Muon's update AdamW's RMS, so one lr and weight decay serve both.
// Muon's m lives in the parameter's exp_avg buffer (its exp_avg_sq stays 0),
// so checkpoints keep their layout.
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
#include <string>
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

// Which parameters optim.name = muon puts on Muon: matrices (dim >= 2) whose
// name optim.muon_exclude does not match (no names: every matrix). All false
// for another optimizer.
std::vector<bool> muon_parameters(const OptimConfig& cfg, const std::vector<at::Tensor>& params,
                                  const std::vector<std::string>& names);
// The matrix-product FLOPs of one inner step (2 per multiply-add, as the
// model's count): Muon's Newton-Schulz iterations, 4 m^2 n + 2 m^3 each for
// an m x n matrix (m <= n); 0 for AdamW and SGD, whose elementwise work is
// not counted, as the model's is not. The modelled clock adds it to a step.
double inner_step_flops(const OptimConfig& cfg, const std::vector<at::Tensor>& params,
                        const std::vector<std::string>& names);

class InnerOptimizer {
 public:
  // names: the parameters' names, for optim.muon_exclude (none given: every
  // matrix is on Muon).
  InnerOptimizer(const OptimConfig& cfg, const std::vector<at::Tensor>& params,
                 const std::vector<std::string>& names = {});
  // The flat moment buffers, parameter after parameter (AdamW's first and
  // second moments; Muon's momentum is in the first, its second stays 0);
  // undefined for SGD. DES-LOC averages them in place.
  at::Tensor& first_moments() { return exp_avg_; }
  at::Tensor& second_moments() { return exp_avg_sq_; }
  // Whether parameter i is on Muon (tests, the start event).
  bool on_muon(size_t i) const { return i < muon_.size() && muon_[i]; }
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
  void adamw_param(size_t i, double lr);
  void muon_step(double lr);

  OptimConfig cfg_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> sgd_;  // cfg.name == "sgd"
  // AdamW. Flat buffers in parameter order; *_views_[i] is parameter i's
  // part, shaped like it.
  at::Tensor grads_, exp_avg_, exp_avg_sq_, denom_;
  std::vector<at::Tensor> grad_views_, exp_avg_views_, exp_avg_sq_views_, denom_views_;
  std::vector<int64_t> steps_;  // per parameter, as LibTorch counts them (a step without a gradient is skipped)
  std::vector<bool> decays_;    // weight decay: matrices only
  std::vector<bool> muon_;      // on Muon (optim.name = muon): the matrices muon_exclude does not name
};

}  // namespace atl
