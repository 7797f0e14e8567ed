// Simulated runs: all N workers as threads of this process, joined by an
// InProcessGroup, with a Rendezvous for the observation that never touches
// the ledger or the clocks. The worker loop itself is the driver's.
#include <filesystem>
#include <memory>
#include <system_error>

#include "atoll/comm.h"
#include "atoll/net.h"
#include "atoll/train.h"
#include "train/checkpoint.h"
#include "train/cluster.h"
#include "train/driver.h"
#include "train/metrics.h"
#include "train/rendezvous.h"
#include "train/run_folder.h"
#include "train/stop_signal.h"
#include "train/threads.h"

namespace atl {
namespace {

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

RunSummary run_with_log(const Config& cfg, MetricsLog& log, const TrainHooks& hooks, const CheckpointPlan& plan = {}) {
  SimCluster cluster(cfg.strategy.workers, parse_algorithm(cfg.network.algorithm), island_layout(cfg));
  RunSummary s = run_on_cluster(cfg, cluster, log, hooks, threads_per_worker(cfg.run.threads, cfg.strategy.workers), plan);
  s.events = log.lines();
  return s;
}

}  // namespace

RunSummary simulate(const Config& cfg, const TrainHooks& hooks) {
  throw_if_errors(validate(cfg));
  MetricsLog log("");
  return run_with_log(cfg, log, hooks);
}

RunSummary train(const Config& cfg, const TrainHooks& hooks) {
  throw_if_errors(validate(cfg));
  const StartPlan start = plan_start(cfg);
  CheckpointPlan plan;
  std::unique_ptr<MetricsLog> log;
  if (start.resume) {
    plan.run_dir = run_folder(cfg);
    plan.resume_step = start.step;
    log = reopen_for_resume(plan.run_dir, plan.resume_step);
  } else {
    plan.run_dir = create_run_folder(cfg, start.replace);
    log = std::make_unique<MetricsLog>(plan.run_dir.string());
  }
  StopSignalScope signals;
  RunSummary s;
  try {
    s = run_with_log(cfg, *log, hooks, plan);
  } catch (...) {
    // A new run that failed before its first logged step (unreadable data,
    // say) leaves no folder behind to block the corrected command.
    if (!start.resume && log->lines().size() <= 1 && CheckpointStore(plan.run_dir).steps().empty()) {
      log.reset();
      std::error_code ec;
      std::filesystem::remove_all(plan.run_dir, ec);
    }
    throw;
  }
  s.run_dir = plan.run_dir.string();
  if (s.stopped_at < 0) write_summary(plan.run_dir, s);
  return s;
}

}  // namespace atl
