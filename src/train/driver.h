// The shared driver (simulate.cpp) as the real-run entry point uses it.
#pragma once

#include <filesystem>
#include <memory>
#include <vector>

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

// An existing run folder to resume: checks that its config.toml matches
// cfg in every setting that shapes the trajectory, finds the newest
// checkpoint whose `parts` are complete, and returns its step. Throws with
// what is wrong and what to do; changes nothing on disk.
int64_t find_resume_step(const Config& cfg, const std::filesystem::path& dir, const std::vector<std::string>& parts);
// Opens the metrics of a resumed run at the sizes its checkpoint recorded and
// removes newer, unfinished checkpoint folders.
std::unique_ptr<MetricsLog> reopen_for_resume(const std::filesystem::path& dir, int64_t step);

// runs/<name>/ with config.toml, refusing to replace a non-empty folder
// unless cfg.run.overwrite.
std::filesystem::path create_run_folder(const Config& cfg);
// summary.json from a finished run.
void write_summary(const std::filesystem::path& dir, const RunSummary& s);

}  // namespace atl
