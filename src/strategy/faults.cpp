#include "strategy/faults.h"

#include "util/rng.h"

namespace atl {

FaultPlan::FaultPlan(const Config& cfg)
    : absent_(parse_fault_windows(cfg.faults.absent, "faults.absent", false)),
      corrupt_(parse_fault_windows(cfg.faults.corrupt, "faults.corrupt", true)),
      drop_prob_(cfg.faults.drop_prob),
      seed_(mix_seed(static_cast<uint64_t>(cfg.run.seed), 0xfa017u)),
      workers_(cfg.strategy.workers) {
  active_ = !absent_.empty() || !corrupt_.empty() || drop_prob_ > 0 || cfg.diloco.aggregator != "mean" ||
            cfg.diloco.clip_norm > 0;
}

bool FaultPlan::absent(int64_t worker, int64_t t) const {
  for (const auto& w : absent_)
    if (w.worker == worker && w.contains(t)) return true;
  return false;
}

std::vector<int64_t> FaultPlan::joiners(int64_t t) const {
  std::vector<int64_t> out;
  if (t == 0) return out;
  for (int64_t w = 0; w < workers_; ++w)
    if (absent(w, t - 1) && !absent(w, t)) out.push_back(w);
  return out;
}

bool FaultPlan::dropped(int64_t worker, int64_t t) const {
  if (drop_prob_ <= 0) return false;
  uint64_t state = mix_seed(seed_, static_cast<uint64_t>(worker) + 1, static_cast<uint64_t>(t));
  return uniform01(state) < drop_prob_;
}

std::string FaultPlan::corruption(int64_t worker, int64_t t) const {
  for (const auto& w : corrupt_)
    if (w.worker == worker && w.contains(t)) return w.kind;
  return "";
}

}  // namespace atl
