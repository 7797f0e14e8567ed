// `atoll compare`: finished run folders as one Markdown table, one row per
// setting (runs that differ only in run.seed are its seeds): the mean over
// seeds with a 95% Student-t interval, and the paired difference against
// the first setting with whether it is significant. Language models are
// counted in tokens with a perplexity; classifiers and regressors in
// examples, classifiers with their accuracy.
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

// The paired difference of the final eval loss against the first setting,
// with its (Holm-adjusted, versus_verdicts) verdict.
std::string versus(const RunGroup& g, const RunGroup& base, const GroupFigures& fb, const std::string& verdict) {
  if (&g == &base) return "-";
  const MeanInterval d = paired_loss_difference(g, base);
  const std::string text = format_paired_difference(d, fb.loss.mean, "±");
  return d.has_interval() ? text + " " + verdict : text;
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
std::string number_or_dash(double v, const char* format) {
  return std::isfinite(v) ? format_number(format, v) : std::string("-");
}

// What the settings' tasks call for: a language model's batch is counted
// in tokens and its loss has a perplexity; a classifier's and a
// regressor's batch in examples, a classifier's loss beside its accuracy.
struct Units {
  bool tokens = false, examples = false, perplexity = false, accuracy = false;
  std::string batch_header;
};
Units units_of(const std::vector<RunGroup>& groups) {
  Units u;
  for (const auto& g : groups) {
    const RunData& r = *g.runs.front();
    (counts_tokens(r) ? u.tokens : u.examples) = true;
    u.perplexity = u.perplexity || counts_tokens(r);
    u.accuracy = u.accuracy || r.task == "classification";
  }
  u.batch_header = u.tokens && u.examples ? "global batch" : u.tokens ? "global batch tokens" : "global batch examples";
  return u;
}

// A run's global batch in the column's unit (both named when they mix).
std::string global_batch(const RunData& r, const Units& u) {
  const bool mixed = u.tokens && u.examples;
  if (counts_tokens(r)) return std::to_string(r.global_batch_tokens) + (mixed ? " tokens" : "");
  if (r.global_batch_examples <= 0) return "-";
  return std::to_string(r.global_batch_examples) + (mixed ? " examples" : "");
}

// "97.31% ± 0.42%"; "-" for a setting that has none.
std::string accuracy(const MeanInterval& a) {
  if (!std::isfinite(a.mean)) return "-";
  MeanInterval p = a;
  p.mean *= 100;
  p.half_width *= 100;
  const std::string text = format_mean_interval(p, 2);
  const auto pm = text.find(" ± ");
  return pm == std::string::npos ? text + "%" : text.substr(0, pm) + "%" + text.substr(pm) + "%";
}

}  // namespace

std::string format_megabytes(double bytes) {
  if (bytes <= 0) return "0";
  const double mb = bytes / 1e6;
  return mb >= 100 ? format_number("%.0f", mb) : mb >= 1 ? format_number("%.1f", mb) : format_number("%.3g", mb);
}

std::string compare_runs(const std::vector<std::string>& run_dirs, double target_loss) {
  if (run_dirs.empty()) throw std::invalid_argument("compare needs at least one run folder");
  std::vector<RunData> runs;
  runs.reserve(run_dirs.size());
  for (const auto& d : run_dirs) runs.push_back(load_run(d));
  const std::vector<RunGroup> groups = group_by_seed(runs);
  const RunGroup& base = groups.front();
  const GroupFigures fb = group_figures(base, 0);
  const Units units = units_of(groups);
  std::string header = "| run | seeds | strategy | N | steps | " + units.batch_header + " | final val loss | ";
  if (units.perplexity) header += "perplexity | ";
  if (units.accuracy) header += "accuracy | ";
  header +=
      "vs first (paired) | sent/worker (MB) | bytes vs first | sim time (s) | utilisation | correlation | "
      "update correlation | disagreement |";
  if (target_loss > 0) header += " time to loss " + format_target_loss(target_loss) + " |";
  std::ostringstream o;
  o << header << "\n" << markdown_delimiter(header) << "\n";
  const std::vector<std::string> verdicts = versus_verdicts(groups, base);
  for (const auto& g : groups) {
    const RunData& r = *g.runs.front();
    const GroupFigures f = group_figures(g, target_loss);
    const std::string& verdict = verdicts[size_t(&g - groups.data())];
    o << "| " << g.name << " | " << f.seeds << " | " << r.strategy << " | " << workers_label(r) << " | " << r.steps
      << " | " << global_batch(r, units) << " | " << format_mean_interval(f.loss, 4) << " | ";
    if (units.perplexity) o << (counts_tokens(r) ? format_mean_interval(f.ppl, 3) : std::string("-")) << " | ";
    if (units.accuracy) o << accuracy(f.accuracy) << " | ";
    o << versus(g, base, fb, "(" + verdict + ")") << " | " << format_mean_interval(scaled(f.bytes_per_worker, 1e-6), 2)
      << " | " << bytes_ratio(f.bytes_per_worker.mean, fb.bytes_per_worker.mean) << " | "
      << format_mean_interval(f.sim_seconds, 1) << " | " << format_number("%.1f%%", 100.0 * f.utilisation.mean) << " | "
      << (r.has_correlation && r.workers > 1 ? format_number("%.4f", f.correlation.mean) : std::string("-")) << " | "
      << number_or_dash(f.update_correlation.mean, "%.4f") << " | " << number_or_dash(f.disagreement.mean, "%.4g")
      << " |";
    // Censored at each run's end when a seed misses it (target_time.h).
    if (target_loss > 0) o << " " << target_times_text(f.to_target) << " |";
    o << "\n";
  }
  std::vector<std::pair<std::string, const RunData*>> all;
  for (const auto& g : groups) all.emplace_back(g.name, g.runs.front());
  const std::string islands = islands_note(all);
  if (!islands.empty()) o << "\n" << islands;
  if (groups.size() < runs.size())
    o << "\nMean over seeds ± the half-width of its 95% Student-t interval (left out when it would print as 0); "
         "\"vs first\" is the paired difference "
         "of the final eval loss over shared seeds (n pairs): significant when its interval excludes 0, else "
         "inconclusive.\n";
  const std::string holm = holm_note(groups, base);
  if (!holm.empty()) o << "\n" << holm << "\n";
  if (target_loss > 0)
    o << "\nTime to loss: simulated seconds to the first evaluation at or below it; a seed that never reaches it "
         "counts as its run's end, a lower bound (\"≥ T (k of K reached)\").\n";
  return o.str();
}

}  // namespace atl
