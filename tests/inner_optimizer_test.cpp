// The inner AdamW on flat buffers takes LibTorch's AdamW's steps to the bit:
// clipping on, matrices decayed and vectors not, a step where a parameter
// has no gradient (LibTorch skips it and its step count), the learning
// rate changing every step, and sizes that end off the vector width.
#include <gtest/gtest.h>

// torch/types.h first: clip_grad.h uses torch::Tensor without including it.
#include <torch/types.h>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <ATen/ATen.h>

#include <vector>

#include "atoll/config.h"
#include "strategy/inner_optimizer.h"

namespace atl {
namespace {

std::vector<at::Tensor> make_params(uint64_t seed) {
  at::manual_seed(seed);
  std::vector<at::Tensor> out;
  for (auto shape : std::vector<std::vector<int64_t>>{{37, 19}, {19}, {64, 64}, {5}, {3, 7, 2}, {1}})
    out.push_back(at::randn(shape).set_requires_grad(true));
  return out;
}

// What autograd does: add into a present gradient, else take a copy.
void give_gradient(at::Tensor p, const at::Tensor& g) {
  if (p.grad().defined()) {
    p.mutable_grad().add_(g);
  } else {
    p.mutable_grad() = g.clone();
  }
}

TEST(InnerOptimizer, FlatAdamWEqualsLibTorchsAdamWToTheBit) {
  OptimConfig cfg;
  cfg.name = "adamw";
  cfg.grad_clip = 0.5;  // below the gradients' norm, so every step clips
  cfg.weight_decay = 0.1;
  const auto ours = make_params(3), theirs = make_params(3);
  InnerOptimizer flat(cfg, ours);
  // The reference: LibTorch's AdamW as atoll used it before, groups and all.
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& p : theirs) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(wd).eps(1e-8));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, options(cfg.weight_decay));
  groups.emplace_back(no_decay, options(0.0));
  torch::optim::AdamW reference(groups, torch::optim::AdamWOptions(cfg.lr));

  at::manual_seed(11);
  for (int step = 0; step < 25; ++step) {
    const double lr = 1e-3 * (1 + step % 4);
    for (size_t i = 0; i < ours.size(); ++i) {
      if (step == 6 && i == 1) {  // no gradient this step, in both
        at::Tensor a = ours[i], b = theirs[i];
        a.mutable_grad() = at::Tensor();
        b.mutable_grad() = at::Tensor();
        continue;
      }
      const at::Tensor g = at::randn(ours[i].sizes()) * double(1 + i);
      give_gradient(ours[i], g);
      give_gradient(theirs[i], g);
    }
    flat.step(lr);
    {
      at::NoGradGuard no_grad;
      torch::nn::utils::clip_grad_norm_(theirs, cfg.grad_clip);
    }
    for (auto& group : reference.param_groups()) group.options().set_lr(lr);
    reference.step();
    reference.zero_grad();
    for (size_t i = 0; i < ours.size(); ++i)
      ASSERT_TRUE(at::equal(ours[i], theirs[i])) << "parameter " << i << " differs after step " << step;
  }
}

}  // namespace
}  // namespace atl
