// How a job started by a launcher (atoll launch, torchrun) becomes a run:
// one worker per rank, and a restart that resumes. Policy, so it lives here
// rather than in the command line (include/atoll/train.h).
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "atoll/train.h"

namespace atl {

std::vector<std::string> with_one_worker_per_rank(std::vector<std::string> overrides, const DistOptions& dist) {
  const bool workers_given = std::any_of(overrides.begin(), overrides.end(),
                                         [](const std::string& o) { return o.rfind("strategy.workers=", 0) == 0; });
  if (!workers_given && dist.world_size > 0)
    overrides.insert(overrides.begin(), "strategy.workers=" + std::to_string(dist.world_size));
  return overrides;
}

std::string resume_after_restart(Config& cfg, int64_t rank) {
  const char* restarts = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (restarts == nullptr || std::atoll(restarts) <= 0 || cfg.run.resume != "false") return "";
  cfg.run.resume = "auto";
  if (rank > 0) return "";
  // The resume policy itself is the run folder's (plan_start); this says what it will do.
  const StartPlan start = plan_start(cfg, rank);
  return std::string("restart ") + restarts + ": " +
         (start.resume ? "resuming from the checkpoint of step " + std::to_string(start.step)
                       : "no complete checkpoint; starting the run again");
}

}  // namespace atl
