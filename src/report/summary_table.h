// The HTML report's summary: one row per setting, in two tables so the
// page fits a laptop screen (1366 px). The first (#summary) holds what a
// comparison is about, in three column groups: the final eval loss (with
// perplexity for language models, accuracy for classifiers, and the paired
// difference against the baseline), communication per worker, and simulated
// time (the whole run, and to the target loss). The second
// (#summary-more, folded under a <details>) holds the rest: strategy,
// workers, seeds, steps, what each run trained on, all workers' bytes,
// compute utilisation and the workers' agreement.
//
// Every figure cell keeps its text on one line (class "num", white-space:
// nowrap): a number is never split, only a note (a verdict, "1 of 3 seeds")
// goes on a line of its own. Intervals follow figure_text.h.
#pragma once

#include <string>
#include <vector>

#include "atoll/report.h"
#include "report/groups.h"
#include "report/network_sliders.h"

namespace atl {

// `base` the reference setting, `ddp` the one communication is compared
// with (nullptr: none), `target` the time-to-loss target. The cells the
// network sliders rewrite carry sliders.cell(...) marks.
std::string summary_tables(const std::vector<RunGroup>& groups, const RunGroup& base, const RunGroup* ddp,
                           const TargetLoss& target, const NetworkSliders& sliders);

// The style of the tables (part of the page's <style>).
extern const char* const kSummaryStyle;

}  // namespace atl
