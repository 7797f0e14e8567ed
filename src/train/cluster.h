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
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "train/worker_report.h"

namespace atl {

class Cluster {
 public:
  virtual ~Cluster() = default;
  virtual int64_t world() const = 0;
  // Global ranks of the workers that run in this process, ascending.
  virtual std::vector<int64_t> local_ranks() const = 0;
  // The communicator rank `rank`'s strategy uses: with islands
  // (islands.devices D > 1) the cross-island group of its device index
  // (group rank = its island), else the group of every worker.
  virtual Communicator& comm(int64_t rank) = 0;
  // With islands: the group of rank `rank`'s own island (group rank = its
  // device index), for the gradient all-reduce inside the island; else null.
  virtual Communicator* island_comm(int64_t /*rank*/) { return nullptr; }
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
