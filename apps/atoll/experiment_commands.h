// atoll sweep, compare, report and results: runs of a preset over its grid
// and seeds, and finished run folders into tables, an HTML page and
// RESULTS.md (docs/COMPARISONS.md).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/experiment.h"
#include "atoll/report.h"

class ExperimentCommands {
 public:
  explicit ExperimentCommands(CLI::App& app);
  // Runs the command the user named; false when it was none of these.
  bool run(int& exit_code);

 private:
  int sweep();

  CLI::App* compare_ = nullptr;
  std::vector<std::string> compare_dirs_;
  double compare_target_loss_ = 0;  // --target-loss: the time-to-loss column's loss; 0 = none

  CLI::App* sweep_ = nullptr;
  atl::SweepOptions sweep_opts_;
  bool sweep_quick_ = false, sweep_no_report_ = false, sweep_no_sliders_ = false;
  int64_t sweep_seeds_ = 0;

  CLI::App* report_ = nullptr;
  std::vector<std::string> report_dirs_;
  std::string report_out_ = "report.html";
  atl::ReportOptions report_opts_;
  bool report_no_sliders_ = false;

  CLI::App* results_ = nullptr;
  std::vector<std::string> result_presets_;
  std::string results_out_ = "docs/RESULTS.md", results_root_;
  int64_t results_seeds_ = 0;
};
