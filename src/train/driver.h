// The driver: the worker loop every worker runs, the same for a simulated
// run (all workers as threads of this process) and a real one (one worker
// per process); a Cluster says where the workers are. At observation steps
// (schedule.h) the local workers park, and the driver hands their reports to
// the Observer and writes checkpoints.
#pragma once

#include <cstdint>
#include <filesystem>

#include "atoll/config.h"
#include "atoll/train.h"
#include "train/cluster.h"
#include "train/metrics.h"

namespace atl {

// Where checkpoints go and which one a resumed run starts from.
struct CheckpointPlan {
  std::filesystem::path run_dir;  // empty: no checkpoints (simulate())
  int64_t resume_step = -1;       // >= 0: continue from that checkpoint
};

// Runs cfg's worker loop and observer over `cluster`; `log` is written only
// by the leader. `threads_per_worker_hint`: compute threads of each worker.
RunSummary run_on_cluster(const Config& cfg, Cluster& cluster, MetricsLog& log, const TrainHooks& hooks,
                          int64_t threads_per_worker_hint, const CheckpointPlan& plan = {});

}  // namespace atl
