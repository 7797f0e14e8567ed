// Which steps of a run log, evaluate, measure worker agreement or write a
// checkpoint, and the inner learning rate at each step. Pure functions of the
// config, so every worker and every process agrees on them without talking.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>

#include "atoll/config.h"

namespace atl {

class Schedule {
 public:
  explicit Schedule(const Config& cfg);
  // Step counts here are "after step": 0 is the start, train.steps the end.
  bool is_eval_step(int64_t step) const;
  bool is_correlation_step(int64_t step) const;
  bool is_log_step(int64_t step) const;
  bool is_checkpoint_step(int64_t step) const;
  // The run stops here by request (run.stop_at) rather than at its end.
  bool is_stop_step(int64_t step) const { return stop_at_ > 0 && step == stop_at_; }
  int64_t steps() const { return steps_; }

 private:
  int64_t steps_, eval_every_, log_every_, correlation_every_, workers_, checkpoint_every_, stop_at_;
};

}  // namespace atl
