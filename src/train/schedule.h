// Which steps of a run log, evaluate, measure worker agreement or write a
// checkpoint, and the inner learning rate at each step. Pure functions of the
// config, so every worker and every process agrees on them without talking.
//
// Thread-safety: immutable after construction.
#pragma once

#include <cstdint>

#include "atoll/config.h"
#include "atoll/strategy.h"

namespace atl {

class Schedule {
 public:
  explicit Schedule(const Config& cfg);
  // Step counts here are "after step": 0 is the start, train.steps the end.
  bool is_eval_step(int64_t step) const;
  // Worker agreement (ALGORITHMS.md 9), with `method` one worker's strategy.
  // A method with outer syncs (Strategy::next_sync_step) is measured just
  // before a sync, when its workers are furthest apart, after its local
  // start: at the steps whose next step ends with a sync, the last of them
  // at or before each multiple of strategy.correlation_every and the last
  // one of the run. Right after a sync (and at the end of a run of whole
  // rounds) its workers agree by construction, so it is never measured
  // there. Other methods: every correlation_every steps and at the end.
  bool is_correlation_step(int64_t step, const Strategy& method) const;
  // Where the agreement's reference model is taken for a method with outer
  // syncs and a local start after step 0 (the end of its DDP warm-up).
  bool is_agreement_origin_step(int64_t step, const Strategy& method) const;
  // Log steps: every train.log_every steps, the end, and the two above.
  bool is_log_step(int64_t step, const Strategy& method) const;
  bool is_checkpoint_step(int64_t step) const;
  // The run stops here by request (run.stop_at) rather than at its end.
  bool is_stop_step(int64_t step) const { return stop_at_ > 0 && step == stop_at_; }
  int64_t steps() const { return steps_; }

 private:
  bool measures_agreement() const { return workers_ > 1 && correlation_every_ > 0; }
  int64_t steps_, eval_every_, log_every_, correlation_every_, workers_, checkpoint_every_, stop_at_;
};

}  // namespace atl
