#include "strategy/inner_optimizer.h"

// torch/types.h first: clip_grad.h uses torch::Tensor without including it.
#include <torch/types.h>

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <stdexcept>
#include <string>
#include <utility>

namespace atl {

void clip_gradients(const std::vector<at::Tensor>& params, double max_norm) {
  if (max_norm > 0) torch::nn::utils::clip_grad_norm_(params, max_norm);
}

std::vector<bool> muon_parameters(const OptimConfig& cfg, const std::vector<at::Tensor>& params,
                                  const std::vector<std::string>& names) {
  std::vector<bool> out(params.size(), false);
  if (cfg.name != "muon") return out;
  const std::regex exclude(cfg.muon_exclude);
  for (size_t i = 0; i < params.size(); ++i)
    out[i] = params[i].dim() >= 2 && !(i < names.size() && std::regex_search(names[i], exclude));
  return out;
}

double inner_step_flops(const OptimConfig& cfg, const std::vector<at::Tensor>& params,
                        const std::vector<std::string>& names) {
  const std::vector<bool> muon = muon_parameters(cfg, params, names);
  double flops = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    if (!muon[i]) continue;
    const double rows = double(params[i].size(0)), cols = double(params[i].numel()) / rows;
    const double m = std::min(rows, cols), n = std::max(rows, cols);
    flops += double(cfg.muon_ns_steps) * (4 * m * m * n + 2 * m * m * m);
  }
  return flops;
}

InnerOptimizer::InnerOptimizer(const OptimConfig& cfg, const std::vector<at::Tensor>& params,
                               const std::vector<std::string>& names)
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
  muon_ = muon_parameters(cfg, params, names);
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
  if (cfg_.name == "muon") {
    muon_step(lr);
  } else if (uniform) {
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
  for (size_t i = 0; i < params_.size(); ++i) adamw_param(i, lr);
}

void InnerOptimizer::adamw_param(size_t i, double lr) {
  at::Tensor p = params_[i];
  if (!p.grad().defined()) return;  // LibTorch skips it, its step count too
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

namespace {

// Muon's quintic Newton-Schulz iteration towards the orthogonal factor of
// g (a matrix), as inner_optimizer.h writes it.
at::Tensor newton_schulz(const at::Tensor& g, int64_t steps) {
  constexpr double a = 3.4445, b = -4.7750, c = 2.0315;
  at::Tensor x = g / (g.norm() + 1e-7);
  const bool tall = x.size(0) > x.size(1);
  if (tall) x = x.t();
  for (int64_t k = 0; k < steps; ++k) {
    const at::Tensor s = x.mm(x.t());
    const at::Tensor poly = s * b + s.mm(s) * c;
    x = x * a + poly.mm(x);
  }
  return tall ? x.t() : x;
}

}  // namespace

void InnerOptimizer::muon_step(double lr) {
  const double mu = cfg_.muon_momentum;
  for (size_t i = 0; i < params_.size(); ++i) {
    if (!muon_[i]) {
      adamw_param(i, lr);
      continue;
    }
    at::Tensor p = params_[i];
    if (!p.grad().defined()) continue;
    ++steps_[i];
    const at::Tensor& g = p.grad();
    at::Tensor& m = exp_avg_views_[i];  // Muon's momentum
    m.mul_(mu).add_(g);
    const at::Tensor u = cfg_.muon_nesterov ? g.add(m, mu) : m;
    const at::Tensor matrix = u.reshape({u.size(0), -1});
    const at::Tensor o = newton_schulz(matrix, cfg_.muon_ns_steps);
    const double scale = 0.2 * std::sqrt(double(std::max(matrix.size(0), matrix.size(1))));
    if (cfg_.weight_decay != 0) p.mul_(1 - lr * cfg_.weight_decay);  // Muon's parameters are matrices
    p.add_(o.view(p.sizes()), -lr * scale);
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
