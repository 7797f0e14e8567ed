#include "strategy/inner_optimizer.h"

#include <torch/types.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

namespace atl {

void clip_gradients(const std::vector<at::Tensor>& params, double max_norm) {
  if (max_norm > 0) torch::nn::utils::clip_grad_norm_(params, max_norm);
}

InnerOptimizer::InnerOptimizer(const OptimConfig& cfg, const std::vector<at::Tensor>& params)
    : cfg_(cfg), params_(params) {
  if (cfg.name == "sgd") {
    opt_ = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(cfg.lr));
    return;
  }
  // Decay matrices (dim >= 2) but not biases, LayerNorm gains or vectors.
  std::vector<at::Tensor> decay, no_decay;
  for (const auto& p : params) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  auto options = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(wd).eps(1e-8));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (!decay.empty()) groups.emplace_back(decay, options(cfg.weight_decay));
  if (!no_decay.empty()) groups.emplace_back(no_decay, options(0.0));
  opt_ = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(cfg.lr));
}

InnerOptimizer::~InnerOptimizer() = default;

void InnerOptimizer::step(double lr) {
  clip_gradients(params_, cfg_.grad_clip);
  for (auto& group : opt_->param_groups()) group.options().set_lr(lr);
  opt_->step();
  opt_->zero_grad();
}

}  // namespace atl
