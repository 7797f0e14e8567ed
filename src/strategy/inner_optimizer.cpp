#include "strategy/inner_optimizer.h"

// torch/types.h first: clip_grad.h uses torch::Tensor without including it.
#include <torch/types.h>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <string>
#include <type_traits>

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

namespace {

// LibTorch 1.x keys optimizer state by the TensorImpl address as a string,
// 2.x by the address itself.
template <typename Map>
typename Map::key_type state_key(const Map&, const at::Tensor& p) {
  if constexpr (std::is_same<typename Map::key_type, std::string>::value) {
    return c10::guts::to_string(p.unsafeGetTensorImpl());
  } else {
    return p.unsafeGetTensorImpl();
  }
}

}  // namespace

void InnerOptimizer::visit_state(StateVisitor& v) {
  StateVisitor::Scope scope(v, "inner");
  if (cfg_.name == "sgd") return;  // plain SGD: no state
  auto& state = opt_->state();
  for (size_t i = 0; i < params_.size(); ++i) {
    StateVisitor::Scope param(v, std::to_string(i));
    const auto key = state_key(state, params_[i]);
    auto it = state.find(key);
    bool has = it != state.end();
    v.flag("has", has);  // AdamW creates a parameter's state at its first step
    if (!has) {
      if (v.loading()) state.erase(key);
      continue;
    }
    if (v.loading() && it == state.end()) {
      auto fresh = std::make_unique<torch::optim::AdamWParamState>();
      fresh->exp_avg(at::zeros_like(params_[i]));
      fresh->exp_avg_sq(at::zeros_like(params_[i]));
      it = state.emplace(key, std::move(fresh)).first;
    }
    auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
    int64_t step = s.step();
    v.integer("step", step);
    s.step(step);
    at::Tensor m = s.exp_avg(), m2 = s.exp_avg_sq();
    v.tensor("exp_avg", m);
    v.tensor("exp_avg_sq", m2);
  }
}

}  // namespace atl
