#include "experiment_commands.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>

#include "atoll/config.h"
#include "atoll/whatif.h"
#include "cli_args.h"

namespace {

// Building the what-if sliders is the slow part of a report (seconds per
// long run): say what is going on and how to skip it.
void print_sliders_note(size_t runs) {
  const size_t points = atl::default_grid_bandwidths().size() * atl::default_grid_latencies().size();
  std::printf("report: retiming %zu runs on %zu networks for the what-if sliders (--no-network-sliders skips)\n", runs,
              points);
  std::fflush(stdout);
}

// The report's time-to-loss target and the rule that chose it.
void print_target(const atl::TargetLoss& t) {
  std::printf("time to loss %s: the target is %s%s\n", atl::format_target_loss(t.value).c_str(),
              t.rule == atl::TargetLoss::Given ? "the one " : "", t.why.c_str());
}

}  // namespace

ExperimentCommands::ExperimentCommands(CLI::App& app) {
  compare_ = app.add_subcommand("compare", "compare finished run folders in a Markdown table");
  compare_->add_option("runs", compare_dirs_, "run folders; ratios are against the first")->required();
  compare_
      ->add_option("--target-loss", compare_target_loss_,
                   "add a time-to-loss column for this eval loss (> 0; a seed that never reaches it counts as its "
                   "run's end, a lower bound: \"≥ T (k of K reached)\"); 0 = no column")
      ->check(CLI::NonNegativeNumber);

  sweep_ = app.add_subcommand(
      "sweep",
      "run a preset's [sweep] runs (x --grid) into runs/<sweep>/<run>/, resuming where it stopped, then write "
      "report.html: atoll sweep <preset.toml> [--grid key=v1,v2[@run,...] ...] [--section.key=value ...]\n"
      "(--grid adds one grid axis; repeat it for more)");
  sweep_->allow_extras();
  sweep_->add_option("--jobs,-j", sweep_opts_.jobs, "runs at once, sharing the cores")->capture_default_str();
  sweep_->add_flag("--quick", sweep_quick_, "the preset's quick overrides, into runs/<sweep>_quick/");
  sweep_->add_option("--out", sweep_opts_.out_root, "folder holding the sweep folder (default: run.out_dir)");
  sweep_->add_flag("--overwrite", sweep_opts_.overwrite, "re-run finished runs whose config changed");
  sweep_->add_flag("!--no-reuse", sweep_opts_.reuse,
                   "train every run here even when a sweep folder beside this one holds the same finished run "
                   "(by default it is copied: every computation key equal, so the same bits)");
  sweep_->add_flag("--no-report", sweep_no_report_, "do not write report.html");
  sweep_->add_flag("--no-network-sliders", sweep_no_sliders_,
                   "report.html without the what-if network sliders (they retime every run 55 times)");
  sweep_->add_option("--seeds", sweep_seeds_,
                     "K: run every setting with K seeds (run.seed, +1, ..., into <run>_s1.._sK; overrides [sweep] "
                     "seeds); tables then show means with 95% intervals");

  report_ = app.add_subcommand("report", "one self-contained HTML page comparing finished run folders");
  report_->add_option("runs", report_dirs_, "run folders")->required();
  report_->add_option("-o,--output", report_out_, "HTML file to write")->capture_default_str();
  report_->add_option("--title", report_opts_.title, "page title")->capture_default_str();
  report_->add_option("--baseline", report_opts_.baseline, "run the table compares with (default: the DDP run)");
  report_->add_option("--target-loss", report_opts_.target_loss,
                      "time-to-target column (default: the baseline's eval loss at 90% of its run)");
  report_->add_flag("--no-network-sliders", report_no_sliders_,
                    "leave out the what-if network sliders (they retime every run 55 times)");
  report_
      ->add_option("--network-sliders-budget", report_opts_.network_sliders_budget,
                   "build the sliders only up to this many replayed worker-steps (steps x workers x 55, summed "
                   "over runs; about 20 us each); 0 = always")
      ->capture_default_str();

  results_ = app.add_subcommand(
      "results", "write RESULTS.md from presets and their finished sweeps: atoll results configs/r*.toml");
  results_->add_option("presets", result_presets_, "preset files, in the order of the page")->required();
  results_->add_option("-o,--output", results_out_, "Markdown file to write")->capture_default_str();
  results_->add_option("--out", results_root_, "folder holding the sweep folders (default: each run.out_dir)");
  results_->add_option("--seeds", results_seeds_, "the seeds the sweeps were run with (default: each preset's)");
}

bool ExperimentCommands::run(int& exit_code) {
  exit_code = 0;
  if (sweep_->parsed()) {
    exit_code = sweep();
    return true;
  }
  if (report_->parsed()) {
    report_opts_.network_sliders = !report_no_sliders_;
    if (report_opts_.network_sliders) print_sliders_note(report_dirs_.size());
    print_target(atl::write_html_report(report_dirs_, report_out_, report_opts_));
    std::printf("report: %s (%zu runs)\n", report_out_.c_str(), report_dirs_.size());
    return true;
  }
  if (results_->parsed()) {
    std::vector<atl::SweepSpec> specs;
    for (const auto& p : result_presets_) specs.push_back(atl::load_sweep(p, {}, {}, false, results_seeds_));
    atl::write_results_markdown(specs, results_root_, results_out_);
    std::printf("results: %s (%zu presets)\n", results_out_.c_str(), specs.size());
    return true;
  }
  if (compare_->parsed()) {
    std::cout << atl::compare_runs(compare_dirs_, compare_target_loss_);
    return true;
  }
  return false;
}

int ExperimentCommands::sweep() {
  const std::vector<std::string> args = sweep_->remaining();
  atl::SweepOptions opts = sweep_opts_;
  // --grid is taken here rather than by CLI11, whose repeatable options would
  // also swallow the preset's path when it follows them.
  std::vector<std::string> grid, rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--grid") {
      if (i + 1 == args.size()) throw atl::ConfigError("--grid needs a value: section.key=v1,v2[@run,...]");
      grid.push_back(args[++i]);
    } else if (args[i].rfind("--grid=", 0) == 0) {
      grid.push_back(args[i].substr(7));
    } else {
      rest.push_back(args[i]);
    }
  }
  std::string preset;
  std::map<std::string, std::string> dist_flags;
  const auto overrides = collect_overrides(rest, preset, dist_flags);
  if (!dist_flags.empty()) throw atl::ConfigError("atoll sweep takes no --" + dist_flags.begin()->first);
  if (preset.empty()) throw atl::ConfigError("atoll sweep needs a preset file (see configs/)");
  const atl::SweepSpec spec = atl::load_sweep(preset, grid, overrides, sweep_quick_, sweep_seeds_);
  opts.exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::printf("atoll sweep %s: %zu runs -> %s/\n", spec.name.c_str(), spec.runs.size(),
              atl::sweep_dir(spec, opts.out_root).c_str());
  std::fflush(stdout);
  atl::SweepOutcome out;
  try {
    out = atl::run_sweep(spec, opts);
  } catch (const atl::SweepInterrupted& e) {
    std::fprintf(stderr, "atoll: %s\n", e.what());
    return 130;  // as a shell reports SIGINT
  }
  std::printf("sweep: %lld ran, %lld already finished", (long long)out.ran, (long long)out.skipped);
  if (out.resumed > 0) std::printf(" (%lld resumed from a checkpoint)", (long long)out.resumed);
  if (out.copied > 0) std::printf(", %lld copied from another sweep folder", (long long)out.copied);
  std::printf("\n");
  if (!sweep_no_report_ && !out.run_dirs.empty()) {
    // The preset's title, baseline and target, and its checks judged over
    // the folders just finished (the page's Claims section).
    atl::ReportOptions ro = atl::sweep_report_options(spec, out.dir);
    ro.network_sliders = !sweep_no_sliders_;
    const std::string html = (std::filesystem::path(out.dir) / "report.html").string();
    if (ro.network_sliders) print_sliders_note(out.run_dirs.size());
    const atl::TargetLoss target = atl::write_html_report(out.run_dirs, html, ro);
    std::cout << "\n" << atl::compare_runs(out.run_dirs) << "\n";
    print_target(target);
    std::printf("report: %s\n", html.c_str());
  }
  return 0;
}
