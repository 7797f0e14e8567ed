#include "strategy/inner_optimizer.h"

// torch/types.h first: clip_grad.h uses torch::Tensor without including it.
#include <torch/types.h>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace atl {

void clip_gradients(const std::vector<at::Tensor>& params, double max_norm) {
  if (max_norm > 0) torch::nn::utils::clip_grad_norm_(params, max_norm);
}

InnerOptimizer::InnerOptimizer(const OptimConfig& cfg, const std::vector<at::Tensor>& params)
    : cfg_(cfg), params_(params) {
  if (cfg.name == "sgd") {
    sgd_ = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(cfg.lr));
    return;
  }
  int64_t total = 0;
  for (const auto& p : params) {
    if (p.scalar_type() != params.front().scalar_type() || p.device() != params.front().device())
      throw std::invalid_argument("the inner AdamW needs every parameter of one dtype and device (parameter " +
                                  std::to_string(&p - params.data()) + " is " + std::string(p.toString()) +
                                  ", the first " + std::string(params.front().toString()) + ")");
    total += p.numel();
  }
  const auto options = params.empty() ? at::TensorOptions() : params.front().options();
  grads_ = at::zeros({total}, options);
  exp_avg_ = at::zeros({total}, options);
  exp_avg_sq_ = at::zeros({total}, options);
  denom_ = at::empty({total}, options);
  int64_t offset = 0;
  for (const auto& p : params) {
    auto view = [&](const at::Tensor& flat) { return flat.narrow(0, offset, p.numel()).view(p.sizes()); };
    grad_views_.push_back(view(grads_));
    exp_avg_views_.push_back(view(exp_avg_));
    exp_avg_sq_views_.push_back(view(exp_avg_sq_));
    denom_views_.push_back(view(denom_));
    decays_.push_back(p.dim() >= 2);
    offset += p.numel();
  }
  steps_.assign(params.size(), 0);
}

InnerOptimizer::~InnerOptimizer() = default;

bool InnerOptimizer::adopt_gradients() {
  bool all = true;
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor p = params_[i];
    const at::Tensor& g = p.grad();
    if (!g.defined()) {
      all = false;
      continue;
    }
    if (g.data_ptr() == grad_views_[i].data_ptr()) continue;
    // A gradient autograd (or a strategy) made: from now on it is our view,
    // which backward accumulates into in place after zero_().
    grad_views_[i].copy_(g);
    p.mutable_grad() = grad_views_[i];
  }
  return all;
}

void InnerOptimizer::step(double lr) {
  at::NoGradGuard no_grad;
  if (sgd_) {
    clip_gradients(params_, cfg_.grad_clip);
    for (auto& group : sgd_->param_groups()) group.options().set_lr(lr);
    sgd_->step();
    sgd_->zero_grad();
    return;
  }
  if (params_.empty()) return;
  const bool all = adopt_gradients();
  if (cfg_.grad_clip > 0) {
    // LibTorch's clip_grad_norm_: the norm of the per-parameter norms, then
    // one factor for every gradient (here one multiply of the flat buffer,
    // or of each present gradient when some are missing).
    std::vector<at::Tensor> norms;
    for (const auto& p : params_)
      if (p.grad().defined()) norms.push_back(p.grad().norm(2.0));
    if (!norms.empty()) {
      const at::Tensor total = norms.size() == 1 ? norms[0] : at::stack(norms).norm(2.0);
      const at::Tensor coef = at::clamp(cfg_.grad_clip / (total + 1e-6), c10::nullopt, 1.0);
      if (all) {
        grads_.mul_(coef);
      } else {
        for (const auto& p : params_)
          if (p.grad().defined()) p.grad().mul_(coef);
      }
    }
  }
  bool uniform = all;
  for (int64_t s : steps_) uniform = uniform && s == steps_.front();
  if (uniform) {
    adamw_flat(lr);
  } else {
    adamw_each(lr);
  }
  // In place, as LibTorch 1.13's zero_grad: the gradients stay our views.
  if (all) {
    grads_.zero_();
  } else {
    for (const auto& p : params_)
      if (p.grad().defined()) p.grad().zero_();
  }
}

// LibTorch's AdamW step, per element: decay p by (1 - lr wd) (matrices),
// m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
void InnerOptimizer::adamw_flat(double lr) {
  const int64_t t = steps_.front() + 1;
  for (auto& s : steps_) s = t;
  if (cfg_.weight_decay != 0)
    for (size_t i = 0; i < params_.size(); ++i)
      if (decays_[i]) params_[i].mul_(1 - lr * cfg_.weight_decay);
  const double bias1 = 1 - std::pow(cfg_.beta1, double(t)), bias2 = 1 - std::pow(cfg_.beta2, double(t));
  exp_avg_.mul_(cfg_.beta1).add_(grads_, 1 - cfg_.beta1);
  exp_avg_sq_.mul_(cfg_.beta2).addcmul_(grads_, grads_, 1 - cfg_.beta2);
  at::sqrt_out(denom_, exp_avg_sq_);
  denom_.div_(std::sqrt(bias2)).add_(1e-8);
  const double step_size = lr / bias1;
  for (size_t i = 0; i < params_.size(); ++i) params_[i].addcdiv_(exp_avg_views_[i], denom_views_[i], -step_size);
}

void InnerOptimizer::adamw_each(double lr) {
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor p = params_[i];
    if (!p.grad().defined()) continue;  // LibTorch skips it, its step count too
    const at::Tensor& g = p.grad();
    const int64_t t = ++steps_[i];
    if (cfg_.weight_decay != 0 && decays_[i]) p.mul_(1 - lr * cfg_.weight_decay);
    const double bias1 = 1 - std::pow(cfg_.beta1, double(t)), bias2 = 1 - std::pow(cfg_.beta2, double(t));
    exp_avg_views_[i].mul_(cfg_.beta1).add_(g, 1 - cfg_.beta1);
    exp_avg_sq_views_[i].mul_(cfg_.beta2).addcmul_(g, g, 1 - cfg_.beta2);
    at::sqrt_out(denom_views_[i], exp_avg_sq_views_[i]);
    denom_views_[i].div_(std::sqrt(bias2)).add_(1e-8);
    p.addcdiv_(exp_avg_views_[i], denom_views_[i], -lr / bias1);
  }
}

void InnerOptimizer::visit_state(StateVisitor& v) {
  StateVisitor::Scope scope(v, "inner");
  if (sgd_) return;  // plain SGD: no state
  for (size_t i = 0; i < params_.size(); ++i) {
    StateVisitor::Scope param(v, std::to_string(i));
    bool has = steps_[i] > 0;
    v.flag("has", has);  // AdamW's state starts at a parameter's first step
    if (!has) {
      if (v.loading()) {
        steps_[i] = 0;
        exp_avg_views_[i].zero_();
        exp_avg_sq_views_[i].zero_();
      }
      continue;
    }
    v.integer("step", steps_[i]);
    if (v.loading() && steps_[i] < 1)
      throw std::runtime_error("inner." + std::to_string(i) + ".step is " + std::to_string(steps_[i]) +
                               " in a state that has one: a step count is at least 1");
    // The visitor gets a copy, and a loader's values are copied back into the
    // flat buffers: a loader may re-seat the tensor it is given
    // (Tensor::set_), which would detach a view from its buffer.
    for (auto [name, view] : {std::pair<const char*, at::Tensor*>{"exp_avg", &exp_avg_views_[i]},
                              std::pair<const char*, at::Tensor*>{"exp_avg_sq", &exp_avg_sq_views_[i]}}) {
      at::Tensor t = view->clone();
      v.tensor(name, t);
      if (v.loading()) view->copy_(t);
    }
  }
}

}  // namespace atl
