// Which loss "time to loss" is measured at (atoll/report.h, TargetLoss).
//
// The worst final loss of any setting, the old default, put the mark where
// most methods pass early, so the column barely told them apart. A loss the
// baseline reaches late in its run (at 90% of it) is one a reader would
// pick: the baseline gets there, and a method that is faster or slower to
// that quality shows it.
#include "report/target_loss.h"

#include <cmath>
#include <limits>
#include <string>

#include "util/format.h"

namespace atl {
namespace {

constexpr double kBaselineShare = 0.9;  // of the baseline's steps

// The index of `run`'s last evaluation after step 0 and at or before
// kBaselineShare of its steps; -1 if none.
long late_evaluation(const RunData& run) {
  const double cutoff = kBaselineShare * static_cast<double>(run.steps);
  long found = -1;
  for (size_t i = 0; i < run.eval_step.size() && i < run.eval_loss.size(); ++i)
    if (run.eval_step[i] > 0 && run.eval_step[i] <= cutoff) found = static_cast<long>(i);
  return found;
}

// The highest finite loss (a diverged seed's NaN says nothing of where to
// put the mark); NaN when none is finite, which no run reaches.
double highest(const std::vector<double>& losses) {
  double h = std::numeric_limits<double>::quiet_NaN();
  for (double l : losses)
    if (std::isfinite(l) && !(l <= h)) h = l;
  return h;
}

// With seeds, the highest of their losses there: every seed of the
// baseline reaches it by then (their mean would leave about half of them
// short of it, so the baseline's own time to it would be unknown).
std::string seeds_note(size_t seeds) {
  return seeds > 1 ? "; the highest of its " + std::to_string(seeds) + " seeds'" : "";
}

}  // namespace

std::string format_target_loss(double loss) {
  return std::abs(loss) >= 1 ? format_number("%.3f", loss) : format_number("%.4g", loss);
}

TargetLoss choose_target_loss(const RunGroup& base, const ReportOptions& options) {
  TargetLoss t;
  if (options.target_loss > 0) {
    t.rule = TargetLoss::Given;
    t.value = options.target_loss;
    t.why = "given (" + options.target_source + ")";
    return t;
  }
  std::vector<double> late, final_losses;
  std::vector<double> steps;
  for (const RunData* r : base.runs) {
    final_losses.push_back(r->final_val_loss);
    const long i = late_evaluation(*r);
    if (i < 0) continue;
    late.push_back(r->eval_loss[static_cast<size_t>(i)]);
    steps.push_back(r->eval_step[static_cast<size_t>(i)]);
  }
  const RunData& first = *base.runs.front();
  if (!late.empty() && late.size() == base.runs.size()) {
    t.rule = TargetLoss::Baseline;
    t.value = highest(late);
    t.why = base.name + "'s eval loss at step " + format_number("%.0f", steps.front()) + " of " +
            std::to_string(first.steps) + " (its last evaluation within " +
            format_number("%.0f", 100 * kBaselineShare) + "% of its run" + seeds_note(base.runs.size()) + ")";
    return t;
  }
  t.rule = TargetLoss::BaselineFinal;
  t.value = highest(final_losses);
  t.why = base.name + "'s final eval loss (it has no evaluation after step 0 within " +
          format_number("%.0f", 100 * kBaselineShare) + "% of its run" + seeds_note(base.runs.size()) + ")";
  return t;
}

TargetLoss choose_target_loss(const std::vector<RunData>& runs, const ReportOptions& options) {
  const std::vector<RunGroup> groups = group_by_seed(runs);
  return choose_target_loss(reference_group(groups, options.baseline), options);
}

}  // namespace atl
