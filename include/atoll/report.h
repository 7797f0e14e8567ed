// Report: run folders -> comparison tables. Never re-runs training.
#pragma once

#include <string>
#include <vector>

namespace atl {

// A Markdown table comparing run folders (each holding summary.json and
// config.toml): strategy, workers, steps, final validation loss, relative to
// the first run, bytes sent per worker, ratio of bytes to the first run,
// simulated time and compute utilisation. Throws naming a folder that is
// not a finished run.
std::string compare_runs(const std::vector<std::string>& run_dirs);

}  // namespace atl
