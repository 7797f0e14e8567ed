// Simulated runs: all N workers as threads of this process, joined by an
// InProcessGroup, with a Rendezvous for the observation that never touches
// the ledger or the clocks. The worker loop itself is the driver's.
#include <filesystem>
#include <memory>
#include <system_error>

#include "atoll/comm.h"
#include "atoll/net.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "train/checkpoint.h"
#include "train/cluster.h"
#include "train/driver.h"
#include "train/metrics.h"
#include "train/rendezvous.h"
#include "train/run_folder.h"
#include "train/sim_cluster.h"
#include "train/stop_signal.h"
#include "train/threads.h"

namespace atl {
namespace {

RunSummary run_with_log(const Config& cfg, MetricsLog& log, const TrainHooks& hooks, const CheckpointPlan& plan = {}) {
  SimCluster cluster(cfg.strategy.workers, parse_algorithm(cfg.network.algorithm), island_layout(cfg));
  RunSummary s =
      run_on_cluster(cfg, cluster, log, hooks, threads_per_worker(cfg.run.threads, cfg.strategy.workers), plan);
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
      if (is_run_folder(plan.run_dir)) std::filesystem::remove_all(plan.run_dir, ec);
    }
    throw;
  }
  s.run_dir = plan.run_dir.string();
  if (s.stopped_at < 0) write_summary(plan.run_dir, s);
  return s;
}

}  // namespace atl
