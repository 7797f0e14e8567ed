// One local worker as the driver keeps it: its model, strategy, data stream,
// virtual clock and communicator, plus the figures it has gathered since the
// last observation. Its visit_state() is the worker's checkpoint.
//
// Thread-safety: written by its worker thread; read by the driver's
// observation callback only while that worker is parked in Cluster::meet().
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "atoll/model.h"
#include "atoll/net.h"
#include "atoll/state.h"
#include "atoll/strategy.h"
#include "comm/timing_trace.h"
#include "train/data_source.h"
#include "train/worker_report.h"

namespace atl {

struct WorkerSlot {
  int64_t rank = 0;
  std::shared_ptr<Model> model;
  std::vector<at::Tensor> params;
  const std::vector<at::Tensor>* global = nullptr;  // strategy's global model, if any
  Strategy* strategy = nullptr;                     // owned by the worker loop
  DataSource::Stream* stream = nullptr;             // owned by the worker loop
  VirtualClock clock;
  // What the clock consumed, for atoll retime (timing/worker-<rank>.trace).
  TimingTrace trace;
  Communicator* comm = nullptr;
  // Islands (islands.devices > 1): the island's group and the gradient
  // average over it (owned by the worker loop); null otherwise.
  Communicator* island_comm = nullptr;
  class GradientAverager* island_grads = nullptr;
  double loss_sum = 0;
  int64_t loss_count = 0;
  double compute_wall = 0;          // wall seconds of compute (real runs report it)
  std::vector<std::string> events;  // "fault" events (JSON) not yet written to the metrics

  // Its figures since the last observation; `comm_wall` is the measured time
  // in collectives (real runs).
  // peak_window_steps: run.peak_window_steps (WorkerReport::peak_sent).
  WorkerReport report(double comm_wall, int64_t peak_window_steps) const;
  // Starts the next observation window.
  void clear_window();
  // Everything the worker carries from one step to the next: model,
  // strategy, data position, clock, ledger, running figures.
  void visit_state(StateVisitor& v);
  // Charges `seconds` of compute to the clock and records it in the trace.
  void charge_compute(double seconds) {
    clock.advance_compute(seconds);
    trace.compute(seconds);
  }
};

}  // namespace atl
