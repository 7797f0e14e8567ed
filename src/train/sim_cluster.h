// The cluster of a simulated run: all N workers as threads of this process,
// joined by InProcessGroups, with a Rendezvous for the observation that
// never touches the ledger or the clocks. atoll retime replays a run's
// communication on the same groups.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "atoll/config.h"
#include "train/cluster.h"
#include "train/rendezvous.h"

namespace atl {

// Without islands one group of every worker. With I islands of D devices,
// worker r = island r / D, device r % D: D cross-island groups of I ranks
// (one per device index) and I island groups of D ranks.
class SimCluster final : public Cluster {
 public:
  SimCluster(int64_t n, CollectiveAlgo algo, IslandLayout islands) : n_(n), devices_(islands.devices), rendezvous_(n) {
    if (devices_ <= 1) {
      cross_.push_back(std::make_unique<InProcessGroup>(n, algo));
      return;
    }
    for (int64_t d = 0; d < devices_; ++d) cross_.push_back(std::make_unique<InProcessGroup>(islands.islands, algo));
    for (int64_t i = 0; i < islands.islands; ++i)
      island_.push_back(std::make_unique<InProcessGroup>(devices_, CollectiveAlgo::Ring));
  }
  int64_t world() const override { return n_; }
  std::vector<int64_t> local_ranks() const override {
    std::vector<int64_t> r(n_);
    for (int64_t i = 0; i < n_; ++i) r[i] = i;
    return r;
  }
  Communicator& comm(int64_t rank) override {
    if (devices_ <= 1) return cross_[0]->rank(rank);
    return cross_[rank % devices_]->rank(rank / devices_);
  }
  Communicator* island_comm(int64_t rank) override {
    if (devices_ <= 1) return nullptr;
    return &island_[rank / devices_]->rank(rank % devices_);
  }
  bool is_leader() const override { return true; }
  bool real() const override { return false; }
  void meet(const std::function<void()>& observe) override { rendezvous_.arrive(observe); }
  std::vector<WorkerReport> reports(const std::vector<WorkerReport>& local) override { return local; }
  std::vector<std::vector<at::Tensor>> params(const std::vector<std::vector<at::Tensor>>& local) override {
    return local;
  }
  double measured_comm_seconds(int64_t) const override { return 0; }
  bool any(bool mine) override { return mine; }
  void abort(const std::string& why) override {
    for (auto& g : cross_) g->abort(why);
    for (auto& g : island_) g->abort(why);
    rendezvous_.abort();
  }

 private:
  int64_t n_, devices_;
  std::vector<std::unique_ptr<InProcessGroup>> cross_, island_;
  Rendezvous rendezvous_;
};

}  // namespace atl
