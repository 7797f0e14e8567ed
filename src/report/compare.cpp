// `atoll compare`: finished run folders as one Markdown table, one row per
// setting (runs that differ only in run.seed are its seeds): the mean over
// seeds with a 95% Student-t interval, and the paired difference against
// the first setting with whether it is significant.
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "atoll/report.h"
#include "report/groups.h"
#include "util/format.h"

namespace atl {
namespace {

// "0.02x (50x fewer)" style: readable whichever way the ratio goes.
std::string bytes_ratio(double bytes, double base) {
  if (base <= 0) return bytes > 0 ? "-" : "0";
  if (bytes <= 0) return "0";
  const double r = bytes / base;
  if (r >= 1) return format_number("%.4gx", r);
  return format_number("%.3gx", r) + format_number(" (%.4gx fewer)", 1.0 / r);
}

// The paired difference of the final eval loss against the first setting.
std::string versus(const RunGroup& g, const RunGroup& base, const GroupFigures& fb) {
  if (&g == &base) return "-";
  const MeanInterval d = paired_loss_difference(g, base);
  const std::string text = format_paired_difference(d, fb.loss.mean, "±");
  return d.has_interval() ? text + " (" + difference_verdict(d) + ")" : text;
}

// An interval in other units (bytes as MB).
MeanInterval scaled(MeanInterval m, double factor) {
  m.mean *= factor;
  m.half_width *= factor;
  m.sd *= factor;
  return m;
}

// Agreement figures are undefined (NaN) for one worker, older runs, or
// before the workers moved.
std::string figure_or_dash(double v, const char* format) {
  return std::isfinite(v) ? format_number(format, v) : std::string("-");
}

}  // namespace

std::string format_megabytes(double bytes) {
  if (bytes <= 0) return "0";
  const double mb = bytes / 1e6;
  return mb >= 100 ? format_number("%.0f", mb) : mb >= 1 ? format_number("%.1f", mb) : format_number("%.3g", mb);
}

std::string compare_runs(const std::vector<std::string>& run_dirs) {
  if (run_dirs.empty()) throw std::invalid_argument("compare needs at least one run folder");
  std::vector<RunData> runs;
  runs.reserve(run_dirs.size());
  for (const auto& d : run_dirs) runs.push_back(load_run(d));
  const std::vector<RunGroup> groups = group_by_seed(runs);
  const RunGroup& base = groups.front();
  const GroupFigures fb = group_figures(base, 0);
  std::ostringstream o;
  o << "| run | seeds | strategy | N | steps | global batch tokens | final val loss | perplexity | vs first (paired) | "
       "sent/worker (MB) | bytes vs first | sim time (s) | utilisation | correlation | update correlation | "
       "disagreement |\n";
  o << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& g : groups) {
    const RunData& r = *g.runs.front();
    const GroupFigures f = group_figures(g, 0);
    o << "| " << g.name << " | " << f.seeds << " | " << r.strategy << " | " << workers_label(r) << " | " << r.steps << " | "
      << r.global_batch_tokens << " | " << format_mean_interval(f.loss, 4) << " | "
      << format_mean_interval(f.ppl, 3) << " | " << versus(g, base, fb) << " | "
      << format_mean_interval(scaled(f.bytes_per_worker, 1e-6), 2) << " | "
      << bytes_ratio(f.bytes_per_worker.mean, fb.bytes_per_worker.mean) << " | "
      << format_mean_interval(f.sim_seconds, 1) << " | "
      << format_number("%.1f%%", 100.0 * f.utilisation.mean) << " | "
      << (r.has_correlation && r.workers > 1 ? format_number("%.4f", f.correlation.mean) : std::string("-"))
      << " | " << figure_or_dash(f.update_correlation.mean, "%.4f") << " | "
      << figure_or_dash(f.disagreement.mean, "%.4g") << " |\n";
  }
  std::vector<std::pair<std::string, const RunData*>> all;
  for (const auto& g : groups) all.emplace_back(g.name, g.runs.front());
  const std::string islands = islands_note(all);
  if (!islands.empty()) o << "\n" << islands;
  if (groups.size() < runs.size())
    o << "\nMean over seeds ± the half-width of its 95% Student-t interval; \"vs first\" is the paired difference "
         "of the final eval loss over shared seeds: significant when its interval excludes 0, else inconclusive.\n";
  return o.str();
}

}  // namespace atl
