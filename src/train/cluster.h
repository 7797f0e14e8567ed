// Where the workers of a run live, as the shared driver sees them: all N as
// threads of this process (simulate) or one per process (real runs). The
// driver's worker loop and observer are the same for both; a Cluster only
// supplies the communicators and brings every worker's figures and
// parameters to the observer.
//
// Thread-safety: comm(r) belongs to worker r's thread; meet() is called by
// every local worker; the observer methods run inside meet()'s callback.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "atoll/comm.h"

namespace atl {

// One worker's figures at an observation, as the observer needs them.
struct WorkerReport {
  double loss_sum = 0;
  int64_t loss_count = 0;
  double sim_now = 0, compute_s = 0, blocked_s = 0;  // virtual clock
  double sent = 0, received = 0;
  int64_t ops = 0;
  double network_model_s = 0;  // sum of the network model's op times (the ledger's)
  double comm_wall_s = 0;      // real runs: measured wall time inside collectives
  double compute_wall_s = 0;   // real runs: measured wall time of forward/backward and updates
  std::map<std::string, double> sent_by_tag;
  std::vector<std::string> events;  // "fault" events (JSON lines) since the last report

  nlohmann::json to_json() const;
  static WorkerReport from_json(const nlohmann::json& j);
};

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int64_t world() const = 0;
  // Global ranks of the workers that run in this process, ascending.
  virtual std::vector<int64_t> local_ranks() const = 0;
  virtual Communicator& comm(int64_t rank) = 0;
  // The process that evaluates, logs and writes the run folder.
  virtual bool is_leader() const = 0;
  // Real processes (measured times are reported) rather than simulated ones.
  virtual bool real() const = 0;
  // Each local worker calls this at an observation step; `observe` runs once
  // per process, when all its local workers have arrived.
  virtual void meet(const std::function<void()>& observe) = 0;
  // Observer collectives (never in the ledger or the simulated clock); every
  // process calls them at the same observations. Results are in rank order.
  virtual std::vector<WorkerReport> reports(const std::vector<WorkerReport>& local) = 0;
  virtual std::vector<std::vector<at::Tensor>> params(const std::vector<std::vector<at::Tensor>>& local) = 0;
  // End of an observation: real runs wait here so the leader's evaluation is
  // not measured as the others' communication time.
  virtual void observed() {}
  // Observer collective: whether any process passed true (also a barrier).
  virtual bool any(bool mine) = 0;
  // Measured wall time rank `rank` spent in collectives (0 when simulated).
  virtual double measured_comm_seconds(int64_t rank) const = 0;
  // A worker failed: release the others (simulate) or tell the peers (real).
  virtual void abort(const std::string& why) = 0;
};

}  // namespace atl
