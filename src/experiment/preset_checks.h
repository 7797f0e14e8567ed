// A preset's checks judged over its run folders and worded once, for both
// pages that show them: RESULTS.md (results.cpp) and a sweep's report.html
// (the Claims section, report/claims_section.h). The wording is made here
// so the two can never disagree about a check.
#pragma once

#include <string>
#include <vector>

#include "atoll/experiment.h"
#include "atoll/report.h"

namespace atl {

// A preset's runs under its sweep folder `dir`: the finished ones made with
// the config the preset gives now (counted), the missing ones, and those
// made with another config (stale: "<run> (<first difference>)"), which are
// also missing (they do not count for the preset).
struct PresetRuns {
  std::vector<std::string> counted;  // folders
  std::vector<std::string> missing, stale;
};
PresetRuns preset_runs(const SweepSpec& spec, const std::string& dir);

// Every check of the preset judged (judge_claim) over the run folders in
// `dir`, worded as the pages print it, and the preset's verdict.
// `every_run_counted` false (a run missing or stale): no check is judged and
// the verdict is "not run".
struct PresetChecks {
  std::vector<ReportClaim> claims;
  int held = 0, failed = 0, equivalent = 0;
  // reproduced | partly reproduced | not reproduced | no difference as large
  // as the effect | inconclusive | not run | no checks
  std::string verdict;
  // "2 of 3 checks hold, 0 fail, 0 equivalent, 1 inconclusive" (and "; one
  // seed per run gives no interval" when so); "" when nothing was judged.
  std::string tally;
};
PresetChecks judge_preset(const SweepSpec& spec, const std::string& dir, bool every_run_counted);

}  // namespace atl
