// Time to a target loss, with censoring (ALGORITHMS.md section 9,
// "Refinements after the first seeded round", 1): a run that never reaches
// the target is not dropped (dropping it would make a method that often
// misses look fast) but censored at its end: its time is a lower bound, the
// run's whole simulated time. Every place that shows or compares a time to
// target (RESULTS.md, atoll compare --target-loss, the HTML report, atoll
// whatif, claims' ttt()) calls these, so the rule is stated once.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "atoll/report.h"
#include "util/stats.h"

namespace atl {

// One run: the simulated time of its first evaluation after step 0 at or
// below `target` (reached), else its end (sim_seconds), a lower bound.
struct TargetTime {
  double seconds = 0;
  bool reached = false;
};
TargetTime target_time(const RunData& run, double target);

// A setting's seeds: the mean of their times with censored ones at their
// end, so when some missed (censored()) the mean is a lower bound of the
// true mean and its interval is not an interval of it.
struct TargetTimes {
  MeanInterval seconds;
  int reached = 0, runs = 0;
  bool censored() const { return reached < runs; }
};
TargetTimes target_times(const std::vector<TargetTime>& times);

// "61.8 s ± 0.3 s" (figure_text's rounding) when every seed reached it;
// "≥ 61.8 s (2 of 3 reached)" when some did not (a lower bound, so no
// interval); "" for no runs. `plus_minus`: "±", or "&plusmn;" in HTML,
// `at_least` "≥" or "&ge;".
std::string target_times_text(const TargetTimes& t, const std::string& plus_minus = "±",
                              const std::string& at_least = "≥");

}  // namespace atl
