#include "train/schedule.h"

#include <algorithm>
#include <cmath>

#include "atoll/train.h"

namespace atl {

double learning_rate(const OptimConfig& cfg, int64_t t, int64_t total_steps) {
  if (t < cfg.warmup_steps) return cfg.lr * double(t + 1) / double(cfg.warmup_steps);
  if (cfg.schedule == "constant") return cfg.lr;
  const double span = std::max<int64_t>(1, total_steps - cfg.warmup_steps);
  const double progress = std::min(1.0, double(t - cfg.warmup_steps) / span);
  return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + std::cos(M_PI * progress));
}

Schedule::Schedule(const Config& cfg)
    : steps_(cfg.train.steps),
      eval_every_(cfg.train.eval_every),
      log_every_(cfg.train.log_every),
      correlation_every_(cfg.strategy.correlation_every),
      workers_(cfg.strategy.workers),
      checkpoint_every_(cfg.run.checkpoint_every),
      stop_at_(cfg.run.stop_at) {}

// eval_every = 0 means the end only, as --help says: not the start either.
bool Schedule::is_eval_step(int64_t step) const {
  return step == steps_ || (eval_every_ > 0 && step % eval_every_ == 0);
}

bool Schedule::is_correlation_step(int64_t step, const Strategy& method) const {
  if (!measures_agreement() || step <= 0) return false;
  if (method.next_sync_step(0) < 0) return step % correlation_every_ == 0 || step == steps_;
  // Step `step` (0-based) is the next to run: it must end with a sync, and
  // the workers must have trained apart for at least one step.
  if (step >= steps_ || step <= method.local_start_step() || method.next_sync_step(step) != step) return false;
  // The last such step at or before the next multiple of correlation_every
  // (or before the end): no other one comes before that.
  const int64_t multiple = (step + correlation_every_ - 1) / correlation_every_ * correlation_every_;
  const int64_t limit = std::min(multiple, steps_ - 1);
  const int64_t next = method.next_sync_step(step + 1);
  return next < 0 || next > limit;
}

bool Schedule::is_agreement_origin_step(int64_t step, const Strategy& method) const {
  return measures_agreement() && step > 0 && step < steps_ && step == method.local_start_step() &&
         method.next_sync_step(0) >= 0;
}

bool Schedule::is_log_step(int64_t step, const Strategy& method) const {
  return step > 0 && (step % log_every_ == 0 || step == steps_ || is_correlation_step(step, method) ||
                      is_agreement_origin_step(step, method));
}

bool Schedule::is_checkpoint_step(int64_t step) const {
  if (step >= steps_) return false;  // the run is complete: nothing to resume
  return step > 0 && ((checkpoint_every_ > 0 && step % checkpoint_every_ == 0) || step == stop_at_);
}

}  // namespace atl
