// The shared driver (simulate.cpp) as the real-run entry point uses it.
#pragma once

#include <filesystem>

#include "atoll/config.h"
#include "atoll/train.h"
#include "train/cluster.h"
#include "train/metrics.h"

namespace atl {

// Runs cfg's worker loop and observer over `cluster`; `log` is written only
// by the leader. `threads_per_worker_hint`: compute threads of each worker.
RunSummary run_on_cluster(const Config& cfg, Cluster& cluster, MetricsLog& log, const TrainHooks& hooks,
                          int64_t threads_per_worker_hint);

// runs/<name>/ with config.toml, refusing to replace a non-empty folder
// unless cfg.run.overwrite.
std::filesystem::path create_run_folder(const Config& cfg);
// summary.json from a finished run.
void write_summary(const std::filesystem::path& dir, const RunSummary& s);

}  // namespace atl
