// PALSGD: Pseudo-Asynchronous Local SGD (Naganuma et al., TMLR 2025,
// arXiv 2504.18454); ALGORITHMS.md 5.
//
//   t < T_w:  DDP (gradient all-reduce every step), theta_bar following theta_i
//             (DDP keeps the replicas bitwise identical, so no average is
//             needed; strategy/ddp_warmup.h, shared with the DiLoCo family)
//   t >= T_w, each worker on its coin flip (seed, worker, step); with
//   palsgd.coins = shared on (seed, step), the same for every worker:
//     with probability p, a pseudo-synchronisation step (no batch, no
//     forward/backward, no communication):
//         theta_i <- theta_i - (lr / p) * eta * (theta_i - theta_bar)
//     otherwise a local AdamW step with learning rate lr / (1 - p)
//     after steps with (t + 1) mod H = 0 (both kinds count):
//         DiLoCo's outer Nesterov step on mean(theta_bar - theta_i); theta_i <- theta_bar
//
// In expectation a step is SGD on f(theta) + (eta / 2) |theta - theta_bar|^2:
// a proximal pull toward the last consensus, applied by randomised splitting.
// With p = 0 this is DiLoCo with a DDP warm-up of T_w steps.
// Config: palsgd.p (0.2), eta (1), inner_steps H (32), ddp_warmup_steps T_w
// (32), outer_lr (0.1), outer_momentum (0.9), outer_steps_per_sync K (1; the
// authors' run: 16, see OuterSync), charge_extra_syncs (false), coins (private).
#pragma once

#include "atoll/strategy.h"
#include "compress/payload.h"
#include "strategy/ddp_warmup.h"
#include "strategy/diloco.h"
#include "strategy/inner_optimizer.h"

namespace atl {

// The [palsgd] section's rules and the pull's stability (palsgd_config.cpp).
void validate_palsgd(const Config& cfg, std::vector<std::string>& errors);

class PalsgdStrategy : public Strategy {
 public:
  PalsgdStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                 const std::vector<std::string>& names = {});
  // No gradient on a pseudo-synchronisation step, nor while away (faults.absent).
  bool needs_gradient(int64_t t) const override { return !pseudo_sync(t) && (warmup_.covers(t) || !outer_.absent(t)); }
  std::vector<StrategyEvent> take_events() override { return outer_.take_events(); }
  double take_extra_flops() override { return outer_.take_extra_flops(); }
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;
  const std::vector<at::Tensor>* global_params() const override { return outer_.global_params(); }
  std::map<std::string, double> stats() const override;
  int64_t next_sync_step(int64_t t) const override {
    return next_round_end(t, cfg_.ddp_warmup_steps, cfg_.inner_steps);
  }
  int64_t local_start_step() const override { return cfg_.ddp_warmup_steps; }

 private:
  bool pseudo_sync(int64_t t) const;

  std::vector<at::Tensor> params_;
  PalsgdConfig cfg_;
  uint64_t coin_seed_;
  InnerOptimizer inner_;
  OuterSync outer_;
  DdpWarmup warmup_;  // always averages gradients: the authors' PALSGD warms up with DDP
  int64_t pseudo_steps_ = 0, local_steps_ = 0;
};

}  // namespace atl
