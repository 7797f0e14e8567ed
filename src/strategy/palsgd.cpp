#include "strategy/palsgd.h"

#include <ATen/ATen.h>

#include "util/rng.h"

namespace atl {
namespace {

DiLoCoConfig outer_config(const PalsgdConfig& p, const DiLoCoConfig& robust) {
  DiLoCoConfig d;
  d.aggregator = robust.aggregator;  // robust aggregation is configured under [diloco] for every method
  d.trim_fraction = robust.trim_fraction;
  d.clip_norm = robust.clip_norm;
  d.inner_steps = p.inner_steps;
  d.outer_lr = p.outer_lr;
  d.outer_momentum = p.outer_momentum;
  d.nesterov = true;
  d.outer_steps_per_sync = p.outer_steps_per_sync;
  d.charge_extra_syncs = p.charge_extra_syncs;
  return d;
}

}  // namespace

PalsgdStrategy::PalsgdStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                               const std::vector<std::string>& names)
    : params_(params),
      cfg_(cfg.palsgd),
      // private: (run seed, worker), each worker flips its own coins; shared:
      // (run seed) alone, as the authors seed every rank's NumPy alike, so all
      // workers skip the same steps (0 is no worker's rank + 1).
      coin_seed_(mix_seed(static_cast<uint64_t>(cfg.run.seed),
                          cfg.palsgd.coins == "shared" ? 0 : static_cast<uint64_t>(comm.rank()) + 1, 0x9a15)),
      inner_(cfg.optim, params, names),
      outer_(outer_config(cfg.palsgd, cfg.diloco), cfg, params, comm),
      warmup_(cfg, cfg.palsgd.ddp_warmup_steps, /*average_gradients=*/true, params, comm, inner_,
              outer_.global_params()) {}

bool PalsgdStrategy::pseudo_sync(int64_t t) const {
  if (warmup_.covers(t) || cfg_.p <= 0) return false;
  uint64_t state = mix_seed(coin_seed_, static_cast<uint64_t>(t));
  return uniform01(state) < cfg_.p;
}

void PalsgdStrategy::step(int64_t t, double lr) {
  if (warmup_.step(t, lr)) return;
  if (outer_.begin_step(t)) {
    // Away (faults.absent): no step of either kind, only the syncs.
  } else if (pseudo_sync(t)) {
    at::NoGradGuard no_grad;
    const double pull = lr / cfg_.p * cfg_.eta;
    const auto& global = *outer_.global_params();
    for (size_t k = 0; k < params_.size(); ++k) {
      at::Tensor p = params_[k];
      p.sub_(p - global[k], pull);
    }
    ++pseudo_steps_;
  } else {
    inner_.step(lr / (1.0 - cfg_.p));
    ++local_steps_;
  }
  if ((t + 1) % cfg_.inner_steps == 0) outer_.sync(t);
}

std::map<std::string, double> PalsgdStrategy::stats() const {
  return {{"palsgd_pseudo_sync_steps", double(pseudo_steps_)}, {"palsgd_local_steps", double(local_steps_)}};
}

void PalsgdStrategy::visit_state(StateVisitor& v) {
  inner_.visit_state(v);
  outer_.visit_state(v);
  warmup_.visit_state(v);
  v.integer("pseudo_steps", pseudo_steps_);
  v.integer("local_steps", local_steps_);
}

}  // namespace atl
