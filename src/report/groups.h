// Seeds: runs that differ only in run.seed are one setting measured several
// times. The tables (atoll compare, the HTML report, RESULTS.md) show each
// setting once, as the mean over its seeds with a 95% Student-t interval,
// and compare settings by the paired difference over the seeds they share
// (ALGORITHMS.md section 9, "How a verdict is decided").
#pragma once

#include <string>
#include <vector>

#include "atoll/report.h"
#include "util/stats.h"

namespace atl {

struct RunGroup {
  std::string name;                  // the runs' common name without "_s<k>"
  std::vector<const RunData*> runs;  // one per seed, in the order given
};

// Groups runs whose configs agree on every key but run.seed (and whose
// seeds differ), in order of first appearance. The RunData must outlive
// the groups.
std::vector<RunGroup> group_by_seed(const std::vector<RunData>& runs);

// A group's final figures over its seeds.
struct GroupFigures {
  MeanInterval loss, ppl, bytes_per_worker, bytes_total, sim_seconds, utilisation, correlation;
  MeanInterval update_correlation, disagreement;  // NaN means when undefined (one worker, older runs)
  MeanInterval accuracy;                          // classification; a NaN mean for other tasks or older runs
  MeanInterval time_to_target;                    // over the seeds that reached it
  int reached = 0;                                // seeds that reached the target
  int seeds = 0;
};
GroupFigures group_figures(const RunGroup& g, double target_loss);

// The paired difference a - b of the final eval loss over the seeds both
// groups ran (matched by run.seed); n = 0 when they share none.
MeanInterval paired_loss_difference(const RunGroup& a, const RunGroup& b);

// A paired difference in words for the tables: "no shared seed",
// "+0.0123 (+0.52%, one seed)" (relative to `base_loss`) or "+0.0123 ± 0.0040"
// with `plus_minus` ("±", or "&plusmn;" in HTML), the interval left out when
// it rounds to 0.0000 (figure_text.h); the caller adds the verdict.
std::string format_paired_difference(const MeanInterval& d, double base_loss, const std::string& plus_minus);

// "significant" (interval excludes 0), "inconclusive" or "one seed".
std::string difference_verdict(const MeanInterval& d);

// The reference group: the one named `name` (a group or run name), else the
// first DDP group, else the first. Throws std::invalid_argument for an
// unknown name.
const RunGroup& reference_group(const std::vector<RunGroup>& groups, const std::string& name);
// The first DDP group, or nullptr.
const RunGroup* ddp_group(const std::vector<RunGroup>& groups);

}  // namespace atl
