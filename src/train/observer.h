// The observer: turns what the workers report at an observation step into
// the run's events (start, train, eval, fault, end), evaluates the model the
// run is judged by, shows progress and builds the summary. It never sees a
// worker: it gets the workers' reports, their gathered parameters, the
// strategy's counters and global model. Only the leader process has one.
//
// Thread-safety: called by one thread at a time (the driver's observation
// callback, while every local worker is parked).
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/model.h"
#include "atoll/net.h"
#include "atoll/state.h"
#include "atoll/train.h"
#include "model/flop_count.h"
#include "model/safetensors.h"
#include "train/correlation.h"
#include "train/data_source.h"
#include "train/evaluation.h"
#include "train/metrics.h"
#include "train/schedule.h"
#include "train/worker_report.h"

namespace atl {

// One "fault" event as a JSON line (workers collect them between observations).
std::string fault_event_line(int64_t step, int64_t worker, const std::string& kind, const std::string& detail);
// The fault event of a link outage, logged at the first observation whose
// simulated time has reached the outage's start (atoll retime rewrites them).
std::string outage_event_line(int64_t step, const Outage& out);

// What the workers bring to one observation.
struct Observation {
  int64_t step = 0;
  bool log = false, eval = false;
  bool agreement = false;                           // measure worker agreement (Schedule::is_correlation_step)
  bool agreement_origin = false;                    // keep the workers' common model as agreement's θ_0
  std::vector<WorkerReport> reports;                // every worker's, rank order
  std::vector<std::vector<at::Tensor>> params;      // every worker's, if needs_params()
  std::map<std::string, double> strategy_stats;     // worker 0's strategy counters
  const std::vector<at::Tensor>* global = nullptr;  // the strategy's global model, if any
};

class Observer {
 public:
  Observer(const Config& cfg, MetricsLog& log, const TrainHooks& hooks, const DataSource& data, const NetworkModel& net,
           bool real_run);
  // Starts the wall clock (of this process's part of the run).
  void start();
  // Called by every worker as it begins its first step; the first call
  // records the start-up time (process start to training), kept as
  // "startup_s" in the end event.
  void first_step_started();
  void write_start_event(int64_t threads_per_worker);
  // Tells the start hook what the run trains (the CLI's model line).
  void announce_start() const;
  // The training FLOPs the modelled clock charges and the events report:
  // a built-in model's formula, model.flops_per_sample, or counted on the
  // first evaluation batch (src/model/flop_count.h).
  const ModelFlops& model_flops() const { return flops_; }
  // Whether observation `o` (before its params and reports are filled in)
  // needs every worker's parameters.
  bool needs_params(const Observation& o) const;
  // Logs the observation; at the last step also the end event and summary.
  void observe(const Observation& o);
  // The running figures between log lines (the driver's checkpoint part).
  void visit_state(StateVisitor& v);
  const RunSummary& summary() const { return summary_; }
  // The model the final evaluation judged, under its exported names
  // (model/export.h), and which one it was (global | average | worker0).
  // Empty before the last step.
  const std::vector<NamedTensor>& final_weights() const { return final_weights_; }
  const std::string& final_eval_model() const { return final_eval_model_; }

 private:
  std::string eval_model_kind(bool has_global) const;
  // Loads the parameters `which` names into the evaluation model.
  void load_eval_params(const std::string& which, const Observation& o);
  // Evaluates them on the fixed sample, or (`full`) on the whole validation split.
  EvalResult evaluate(const std::string& which, const Observation& o, bool full);
  std::vector<Model*> eval_models(size_t batches);
  void log_outages(int64_t step, double sim_time);
  void finish(const Observation& o, double loss, double sim_time, double compute, double sent, double tokens_per_s);
  double seconds_since_start() const;

  Config cfg_;
  MetricsLog& log_;
  TrainHooks hooks_;
  const DataSource& data_;
  const NetworkModel& net_;
  bool real_;
  int64_t workers_;
  bool islands_;  // islands.devices > 1: bytes are split by link class
  std::once_flag first_step_;
  double startup_s_ = std::numeric_limits<double>::quiet_NaN();
  std::shared_ptr<Model> eval_model_;
  std::vector<std::shared_ptr<Model>> eval_replicas_;  // eval_model_'s copies for the other cores
  // θ_0 of the agreement metrics: the workers' common initial parameters,
  // rebuilt like theirs (make_model with the run seed), so also on resume.
  std::vector<at::Tensor> initial_params_;
  // θ_0 instead for a method whose workers train apart from a later step
  // (the end of a DDP warm-up, Schedule::is_agreement_origin_step): their
  // common model there. Empty until then; checkpointed.
  std::vector<at::Tensor> origin_params_;
  int64_t params_ = 0;
  ModelFlops flops_;
  double flops_per_token_ = 0;  // flops_.per_token
  int64_t tokens_per_step_ = 0;
  std::string task_;  // train/task.h: how the reports count and judge the run
  std::chrono::steady_clock::time_point start_;
  double eval_wall_ = 0;
  double elapsed_offset_ = 0;  // wall seconds before the checkpoint this run resumed from
  double logged_sent_ = 0;     // per-worker bytes sent at the previous train event
  int64_t logged_step_ = 0;
  double last_train_loss_ = 0, last_val_loss_ = -1;
  double last_correlation_ = 1;
  Agreement last_agreement_;    // at the latest correlation step
  double final_eval_wall_ = 0;  // wall seconds of the final evaluation
  EvalResult final_eval_;       // the final evaluation (val_loss is also last_val_loss_)
  std::vector<NamedTensor> final_weights_;
  std::string final_eval_model_;
  int64_t outages_logged_ = 0;  // network outages (in time order) already in the metrics
  RunSummary summary_;
};

}  // namespace atl
