// Seeds: runs that differ only in run.seed are one setting measured several
// times. The tables (atoll compare, the HTML report, RESULTS.md) show each
// setting once, as the mean over its seeds with a 95% Student-t interval,
// and compare settings by the paired difference over the seeds they share
// (ALGORITHMS.md section 9, "How a verdict is decided").
#pragma once

#include <string>
#include <vector>

#include "atoll/report.h"
#include "report/target_time.h"
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
  TargetTimes to_target;                          // every seed, one that missed censored at its end (target_time.h)
  int seeds = 0;
};
GroupFigures group_figures(const RunGroup& g, double target_loss);

// The paired difference a - b of the final eval loss over the seeds both
// groups ran (matched by run.seed); n = 0 when they share none.
MeanInterval paired_loss_difference(const RunGroup& a, const RunGroup& b);

// A paired difference in words for the tables: "no shared seed",
// "+0.0123 (+0.52%, n=1 pair)" (relative to `base_loss`) or
// "+0.0123 ± 0.0040 (n=3 pairs)" with `plus_minus` ("±", or "&plusmn;" in
// HTML), the interval left out when it rounds to 0.0000 (figure_text.h);
// "not finite (diverged)" when a seed's loss is not finite. The caller adds
// the verdict.
std::string format_paired_difference(const MeanInterval& d, double base_loss, const std::string& plus_minus);

// The verdict on each group's paired loss difference against `base` ("" for
// base itself): "significant" or "inconclusive" with significance
// Holm-adjusted over the m groups compared, so the family of m claims "X
// differs from base" holds to a 5% family-wise error (p-values from the
// paired t test, util/stats.h); "one seed" or "no interval" when there is
// none. Intervals stay unadjusted 95% ones: holm_note says so.
std::vector<std::string> versus_verdicts(const std::vector<RunGroup>& groups, const RunGroup& base);
// The note under a table that marks several settings against one baseline
// ("" when it marks at most one): what the adjustment is and that the
// intervals are not adjusted.
std::string holm_note(const std::vector<RunGroup>& groups, const RunGroup& base);

// The reference group: the one named `name` (a group or run name), else the
// first DDP group, else the first. Throws std::invalid_argument for an
// unknown name.
const RunGroup& reference_group(const std::vector<RunGroup>& groups, const std::string& name);
// The first DDP group, or nullptr.
const RunGroup* ddp_group(const std::vector<RunGroup>& groups);

}  // namespace atl
