#include "strategy/diloco.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "strategy/flat.h"

namespace atl {

OuterSync::OuterSync(const DiLoCoConfig& outer, const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                     double feedback_decay)
    : params_(std::move(params)),
      comm_(comm),
      cfg_(outer),
      codec_(outer.codec, cfg.codec, numels_of(params_), feedback_decay),
      faults_(cfg) {
  global_ = flatten_values(params_);
  momentum_ = at::zeros_like(global_);
  if (cfg_.outer_optimizer == "adam") second_moment_ = at::zeros_like(global_);
  global_views_ = views_of(global_, params_);
  // Its own codec: a zero payload leaves any codec state (topk's residual) at
  // zero, so this one never holds state to checkpoint and never touches codec_'s.
  if (cfg_.charge_extra_syncs && cfg_.outer_steps_per_sync > 1)
    extra_codec_ = std::make_unique<PayloadCodec>(outer.codec, cfg.codec, numels_of(params_));
}

void OuterSync::sync(int64_t t) {
  at::NoGradGuard no_grad;
  at::Tensor delta = global_ - flatten_values(params_);  // points from the workers back to theta_g
  if (!faults_.active()) {
    mean_all_reduce(comm_, codec_, delta, "pseudo-grad");
    outer_step(delta);
    return;
  }
  const int64_t me = comm_.rank();
  const bool away = faults_.absent(me, t);
  bool contributes = !away;
  if (contributes) {
    const std::string bad = faults_.corruption(me, t);
    if (bad == "nan") delta.fill_(std::numeric_limits<double>::quiet_NaN());
    if (bad == "inf") delta.fill_(std::numeric_limits<double>::infinity());
    if (bad == "scale") delta.mul_(1e6);
    if (!delta.isfinite().all().item<bool>()) {
      contributes = false;
      events_.push_back({t, "nonfinite_dropped", "pseudo-gradient holds NaN/Inf; contribution dropped this round"});
    } else if (faults_.dropped(me, t)) {
      contributes = false;
      events_.push_back({t, "sync_dropped", "pseudo-gradient lost (faults.drop_prob)"});
    } else if (cfg_.clip_norm > 0) {
      const double norm = delta.norm().item<double>();
      if (norm > cfg_.clip_norm) delta.mul_(cfg_.clip_norm / norm);
    }
  }
  if (!contributes) delta.zero_();  // also clears NaN: 0 * NaN would not
  const double wire = codec_.encode(delta);
  int64_t contributors = 0;
  delta = combine(delta, contributes, away ? 0.0 : wire + 4, t, &contributors);
  if (contributors == 0) {
    if (me == 0) events_.push_back({t, "no_contribution", "no worker's pseudo-gradient counted; theta_g unchanged"});
    assign_values(global_, params_);
    return;
  }
  outer_step(delta);
}

at::Tensor OuterSync::combine(at::Tensor delta, bool contributes, double wire_bytes, int64_t t, int64_t* contributors) {
  (void)t;
  const int64_t n = delta.numel();
  at::Tensor payload = at::cat({delta, at::full({1}, contributes ? 1.0 : 0.0, delta.options())});
  if (cfg_.aggregator == "mean") {
    comm_.all_reduce(payload, ReduceOp::Sum, "pseudo-grad", wire_bytes);
    *contributors = static_cast<int64_t>(std::llround(payload[n].item<double>()));
    if (*contributors == 0) return delta;
    at::Tensor mean = payload.narrow(0, 0, n).div(double(*contributors));
    codec_.requantize(mean);  // as mean_all_reduce: the ring delivers a quantized result
    return mean;
  }
  // The robust aggregators gather every worker's decoded payload and combine
  // them locally: no reduced result travels, nothing is re-quantized.
  std::vector<at::Tensor> all;
  comm_.all_gather(payload, all, "pseudo-grad");
  std::vector<at::Tensor> rows;
  for (const auto& p : all)  // rank order: every rank combines the same rows the same way
    if (p[n].item<double>() == 1.0) rows.push_back(p.narrow(0, 0, n));
  *contributors = static_cast<int64_t>(rows.size());
  if (rows.empty()) return delta;
  const int64_t k = *contributors;
  const at::Tensor sorted = std::get<0>(at::stack(rows).sort(0));  // (k, P)
  if (cfg_.aggregator == "median") {
    if (k % 2 == 1) return sorted[k / 2].clone();
    return (sorted[k / 2 - 1] + sorted[k / 2]).div_(2.0);
  }
  const int64_t cut = static_cast<int64_t>(std::floor(cfg_.trim_fraction * double(k)));  // trimmed_mean
  return sorted.narrow(0, cut, k - 2 * cut).mean(0);
}

bool OuterSync::begin_step(int64_t t) {
  if (!faults_.active()) return false;
  at::NoGradGuard no_grad;
  const int64_t me = comm_.rank();
  for (int64_t joiner : faults_.joiners(t)) {
    // Every rank holds the same theta_g; the lowest rank present sends it.
    int64_t root = 0;
    while (root < comm_.size() && faults_.absent(root, t)) ++root;
    comm_.broadcast(global_, std::min(root, comm_.size() - 1), "join");
    if (joiner == me) {
      assign_values(global_, params_);
      events_.push_back({t, "join", "back; received the global model"});
    }
  }
  const bool away = faults_.absent(me, t);
  if (away && (t == 0 || !faults_.absent(me, t - 1)))
    events_.push_back({t, "leave", "away; computes and sends nothing"});
  return away;
}

std::vector<StrategyEvent> OuterSync::take_events() {
  std::vector<StrategyEvent> out;
  out.swap(events_);
  return out;
}

void OuterSync::outer_step(const at::Tensor& delta) {
  apply_outer(delta);
  // The K - 1 further steps of PALSGD's authors' code (ALGORITHMS.md 5(d)): the
  // sync block runs once per micro-batch, the later runs on a model just reset
  // to theta_g, so their pseudo-gradient is exactly zero and each step only
  // applies the decayed momentum. Every rank takes them, so the (optional)
  // all-reduces match up.
  for (int64_t k = 1; k < cfg_.outer_steps_per_sync; ++k) {
    at::Tensor zero = at::zeros_like(global_);
    if (extra_codec_) mean_all_reduce(comm_, *extra_codec_, zero, "pseudo-grad-extra");
    zero.zero_();  // the mean of zeros, whatever the codec: the step is on exactly zero
    apply_outer(zero);
  }
}

void OuterSync::apply_outer(const at::Tensor& delta) {
  const double mu = cfg_.outer_momentum;
  // Pseudo-gradient, momentum, update and reset: about 8 operations per
  // parameter (Adam: 12), charged by the modelled clock.
  extra_flops_ += (cfg_.outer_optimizer == "adam" ? 12.0 : 8.0) * double(global_.numel());
  if (cfg_.outer_optimizer == "adam") {
    // The DiLoCo paper's outer-optimizer ablation: Adam on the pseudo-gradient
    // (beta1 = outer_momentum), with PyTorch's bias correction.
    ++outer_steps_;
    const double b2 = cfg_.outer_beta2;
    momentum_.mul_(mu).add_(delta, 1 - mu);
    second_moment_.mul_(b2).addcmul_(delta, delta, 1 - b2);
    const double c1 = 1 - std::pow(mu, static_cast<double>(outer_steps_));
    const double c2 = 1 - std::pow(b2, static_cast<double>(outer_steps_));
    at::Tensor denom = (second_moment_ / c2).sqrt_().add_(cfg_.outer_eps);
    global_.addcdiv_(momentum_, denom, -cfg_.outer_lr / c1);
  } else {
    momentum_.mul_(mu).add_(delta);
    at::Tensor update = cfg_.nesterov ? delta.add(momentum_, mu) : momentum_;
    global_.sub_(update, cfg_.outer_lr);
  }
  assign_values(global_, params_);
}

void OuterSync::visit_state(StateVisitor& v) {
  StateVisitor::Scope scope(v, "outer");
  v.tensor("global", global_);  // in place: global_views_ stay views of it
  v.tensor("momentum", momentum_);
  v.optional_tensor("second_moment", second_moment_);
  v.integer("outer_steps", outer_steps_);
  codec_.visit_state(v);
}

DiLoCoStrategy::DiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                               const std::vector<std::string>& names)
    : DiLoCoStrategy(cfg, cfg.diloco, 1.0, std::move(params), comm, names) {}

DiLoCoStrategy::DiLoCoStrategy(const Config& cfg, const DiLoCoConfig& outer, double feedback_decay,
                               std::vector<at::Tensor> params, Communicator& comm,
                               const std::vector<std::string>& names)
    : inner_(cfg.optim, params, names),
      outer_(outer, cfg, params, comm, feedback_decay),
      warmup_(DdpWarmup::of_diloco(cfg, params, comm, inner_, outer_.global_params())),
      inner_steps_(cfg.diloco.inner_steps) {}

void DiLoCoStrategy::step(int64_t t, double lr) {
  if (warmup_.step(t, lr)) return;
  if (!outer_.begin_step(t)) inner_.step(lr);  // an absent worker takes no step
  if ((t + 1) % inner_steps_ == 0) outer_.sync(t);
}

void DiLoCoStrategy::visit_state(StateVisitor& v) {
  inner_.visit_state(v);
  outer_.visit_state(v);
  warmup_.visit_state(v);
}

}  // namespace atl
