// atoll whatif: finished runs retimed over a bandwidth grid, time to target
// per setting, and the crossover bandwidths (see atoll/whatif.h).
#include "atoll/whatif.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "atoll/config.h"
#include "atoll/net.h"
#include "atoll/report.h"
#include "report/groups.h"
#include "report/target_loss.h"
#include "train/timing_files.h"
#include "util/format.h"

namespace atl {
namespace {

std::vector<std::string> network_overrides(double bandwidth, double latency, const WhatifOptions& w = {}) {
  std::vector<std::string> o = {"network.bandwidth=" + format_number("%.17g", bandwidth)};
  if (latency >= 0) o.push_back("network.latency=" + format_number("%.17g", latency) + "s");
  if (w.download_ratio > 0)
    o.push_back("network.download_bandwidth=" + format_number("%.17g", w.download_ratio * bandwidth));
  if (!w.algorithm.empty()) o.push_back("network.algorithm=" + w.algorithm);
  if (w.relay_bandwidth > 0) o.push_back("network.server_bandwidth=" + format_number("%.17g", w.relay_bandwidth));
  return o;
}

// What every run was retimed to besides the grid's bandwidth ("" = nothing).
std::string network_note(const WhatifOptions& w) {
  std::string note;
  if (w.download_ratio > 0)
    note += "every link uploads at the row's bandwidth and downloads at " + format_number("%.3g", w.download_ratio) +
            " times it";
  if (!w.algorithm.empty()) note += std::string(note.empty() ? "" : "; ") + "network.algorithm = " + w.algorithm;
  if (w.relay_bandwidth > 0)
    note += std::string(note.empty() ? "" : "; ") + "the relay's link " + format_bit_rate(w.relay_bandwidth);
  return note;
}

RunData as_run_data(const RetimedRun& r, const std::string& dir) {
  std::string metrics;
  for (const auto& line : r.events) metrics += line + "\n";
  return parse_run(dir, r.summary_json, metrics, to_toml(r.config));
}

// Every run loaded once; each network point retimes all of them (or a subset).
class Retimers {
 public:
  explicit Retimers(const std::vector<std::string>& dirs) : dirs_(dirs) {
    for (const auto& d : dirs) retimers_.emplace(d, RunRetimer(d));
  }
  // `dirs` (all of them when empty), in that order.
  std::vector<RunData> at(double bandwidth, const WhatifOptions& o, const std::vector<std::string>& dirs = {}) const {
    std::vector<RunData> runs;
    for (const auto& d : dirs.empty() ? dirs_ : dirs)
      runs.push_back(as_run_data(retimers_.at(d).retime(network_overrides(bandwidth, o.latency, o), o.projection), d));
    return runs;
  }

 private:
  std::vector<std::string> dirs_;
  std::map<std::string, RunRetimer> retimers_;
};

// A setting's mean time to target over its seeds (censored at each run's
// end when a seed misses it, target_time.h), its mean total time, and how
// many of its seeds reach the target.
struct SettingTimes {
  double to_target, total;
  int reached, seeds;
};
SettingTimes setting_times(const RunGroup& g, double target) {
  const GroupFigures f = group_figures(g, target);
  return {f.to_target.seconds.mean, f.sim_seconds.mean, f.to_target.reached, f.seeds};
}

std::vector<double> log_grid(double from, double to, int per_decade) {
  if (!(from > 0) || !(to > from) || per_decade < 1)
    throw std::invalid_argument("whatif: the bandwidth range needs 0 < from < to and at least one point per decade");
  std::vector<double> out;
  const double decades = std::log10(to / from);
  const int steps = std::max(1, int(std::ceil(decades * per_decade - 1e-9)));
  for (int i = 0; i <= steps; ++i) out.push_back(from * std::pow(to / from, double(i) / steps));
  return out;
}

}  // namespace

std::string format_bit_rate(double bytes_per_second) {
  // Rounded to the digits shown before the unit is chosen: a grid point a
  // hair under 1 Gbit/s (124999999.99999997 B/s) reads "1 Gbit/s", not "1e+03 Mbit/s".
  const double bits = std::stod(format_number("%.3g", bytes_per_second * 8));
  if (bits >= 1e9) return format_number("%.3g", bits / 1e9) + " Gbit/s";
  if (bits >= 1e6) return format_number("%.3g", bits / 1e6) + " Mbit/s";
  return format_number("%.3g", bits / 1e3) + " kbit/s";
}

WhatifResult run_whatif(const std::vector<std::string>& run_dirs, const WhatifOptions& o) {
  if (run_dirs.empty()) throw std::invalid_argument("whatif: name at least one finished run folder");
  WhatifResult result;
  result.bandwidths = log_grid(o.bandwidth_from, o.bandwidth_to, o.points_per_decade);
  result.projected = o.projection.active();
  if (o.download_ratio < 0 || !std::isfinite(o.download_ratio))
    throw std::invalid_argument("whatif: the download ratio must be > 0 (0 = each run's own links)");
  if (o.relay_bandwidth < 0 || !std::isfinite(o.relay_bandwidth))
    throw std::invalid_argument("whatif: the relay bandwidth must be > 0 bytes/s (0 = each run's own)");
  if (!o.algorithm.empty()) parse_algorithm(o.algorithm);  // an unknown name lists the allowed ones
  result.network_note = network_note(o);
  if (result.projected)
    result.projection_note =
        "Projection: every payload scaled to a " + format_number("%.3g", o.projection.params) +
        "-parameter model and its compute per step charged instead of the run's. It assumes that model follows the "
        "recorded run's loss per step (the small model's step-loss curve); a bigger model does not in general, so "
        "read the times as the schedule's cost, not as a prediction of the bigger model's loss.";
  const Retimers retimers(run_dirs);
  const std::vector<RunData> originals = [&] {
    std::vector<RunData> runs;
    for (const auto& d : run_dirs) runs.push_back(load_run(d));
    return runs;
  }();
  const std::vector<RunGroup> groups = group_by_seed(originals);
  const RunGroup& base = reference_group(groups, o.baseline);
  result.baseline = base.name;
  // The report's rule, so `atoll whatif` and the report's sliders measure
  // time to the same loss (the worst final loss, the old default, is one
  // most methods pass early).
  ReportOptions target_options;
  target_options.target_loss = o.target_loss;
  const TargetLoss target = choose_target_loss(base, target_options);
  result.target_loss = target.value;
  result.target_why = target.why;
  for (const auto& g : groups) {
    WhatifSetting s;
    s.name = g.name;
    for (const RunData* r : g.runs) s.runs.push_back(r->dir);
    result.settings.push_back(s);
  }
  for (double bw : result.bandwidths) {
    const std::vector<RunData> runs = retimers.at(bw, o);
    const std::vector<RunGroup> at = group_by_seed(runs);
    for (size_t k = 0; k < at.size() && k < result.settings.size(); ++k) {
      const SettingTimes t = setting_times(at[k], result.target_loss);
      result.settings[k].time_to_target.push_back(t.to_target);
      result.settings[k].total_time.push_back(t.total);
      result.settings[k].reached = t.reached;
      result.settings[k].seeds = t.seeds;
    }
  }
  // Crossovers: where a setting's time to target minus the baseline's
  // changes sign between grid points, bisect in log bandwidth.
  const size_t base_index = size_t(&base - groups.data());
  for (size_t k = 0; k < result.settings.size(); ++k) {
    if (k == base_index) continue;
    const WhatifSetting& s = result.settings[k];
    const WhatifSetting& b = result.settings[base_index];
    std::vector<std::string> pair_dirs = s.runs;
    pair_dirs.insert(pair_dirs.end(), b.runs.begin(), b.runs.end());
    auto difference = [&](double bw) {
      const std::vector<RunData> runs = retimers.at(bw, o, pair_dirs);
      const std::vector<RunGroup> gs = group_by_seed(runs);
      if (gs.size() != 2) throw std::logic_error("whatif: a setting and the baseline did not form two groups");
      return setting_times(gs[0], result.target_loss).to_target - setting_times(gs[1], result.target_loss).to_target;
    };
    // A crossover needs both times, not lower bounds: only where every seed
    // of both reaches the target.
    if (s.reached < s.seeds || b.reached < b.seeds) continue;
    for (size_t i = 0; i + 1 < result.bandwidths.size(); ++i) {
      const double d0 = s.time_to_target[i] - b.time_to_target[i];
      const double d1 = s.time_to_target[i + 1] - b.time_to_target[i + 1];
      if (!std::isfinite(d0) || !std::isfinite(d1) || d0 == 0 || (d0 < 0) == (d1 < 0)) continue;
      double lo = result.bandwidths[i], hi = result.bandwidths[i + 1];
      const bool below = d0 < 0;
      while (hi / lo - 1 > o.crossover_tolerance) {
        const double mid = std::sqrt(lo * hi);
        const double d = difference(mid);
        if (d == 0) {
          lo = hi = mid;
          break;
        }
        ((d < 0) == below ? lo : hi) = mid;
      }
      result.crossovers.push_back({s.name, b.name, std::sqrt(lo * hi), below});
    }
  }
  return result;
}

std::string whatif_markdown(const WhatifResult& r) {
  auto seconds = [](double s) { return std::isfinite(s) ? format_number("%.4g s", s) : std::string("not finite"); };
  // A setting's time to target in a cell: a lower bound when a seed missed it.
  auto to_target = [&](const WhatifSetting& s, double t) {
    if (s.reached == s.seeds) return seconds(t);
    return "≥ " + seconds(t) + " (" + std::to_string(s.reached) + " of " + std::to_string(s.seeds) + " reached)";
  };
  std::string md = "# What-if networks\n\n";
  if (r.projected) md += "**" + r.projection_note + "**\n\n";
  if (!r.network_note.empty()) md += "Links: " + r.network_note + ".\n\n";
  md += "Time to eval loss " + format_number("%.4g", r.target_loss) + " (" + r.target_why +
        "; simulated; the first evaluation at or below it, mean over seeds; a seed that never reaches it counts "
        "as its run's end, a lower bound: \"≥ T (k of K reached)\"), "
        "each run retimed by atoll retime to the bandwidth of the row. Fastest in bold.\n\n| bandwidth |";
  for (const auto& s : r.settings) md += " " + s.name + " |";
  md += "\n|---|";
  for (size_t k = 0; k < r.settings.size(); ++k) md += "---|";
  md += "\n";
  for (size_t i = 0; i < r.bandwidths.size(); ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& s : r.settings)
      if (s.reached == s.seeds && std::isfinite(s.time_to_target[i])) best = std::min(best, s.time_to_target[i]);
    md += "| " + format_bit_rate(r.bandwidths[i]) + " |";
    for (const auto& s : r.settings) {
      const double t = s.time_to_target[i];
      md += t == best && s.reached == s.seeds ? " **" + to_target(s, t) + "** |" : " " + to_target(s, t) + " |";
    }
    md += "\n";
  }
  md += "\nTotal simulated time of the whole run:\n\n| bandwidth |";
  for (const auto& s : r.settings) md += " " + s.name + " |";
  md += "\n|---|";
  for (size_t k = 0; k < r.settings.size(); ++k) md += "---|";
  md += "\n";
  for (size_t i = 0; i < r.bandwidths.size(); ++i) {
    md += "| " + format_bit_rate(r.bandwidths[i]) + " |";
    for (const auto& s : r.settings) md += " " + seconds(s.total_time[i]) + " |";
    md += "\n";
  }
  md += "\n## Crossovers against " + r.baseline + "\n\n";
  const std::string range = format_bit_rate(r.bandwidths.front()) + " to " + format_bit_rate(r.bandwidths.back());
  for (const auto& s : r.settings) {
    if (s.name == r.baseline) continue;
    bool any = false;
    for (const auto& c : r.crossovers) {
      if (c.setting != s.name) continue;
      any = true;
      md += "- " + s.name + " reaches " + format_number("%.4g", r.target_loss) + " before " + r.baseline + " " +
            (c.faster_below ? "below " : "above ") + format_bit_rate(c.bandwidth) + " (" + r.baseline + " first " +
            (c.faster_below ? "above" : "below") + " it).\n";
    }
    if (any) continue;
    const WhatifSetting* base = nullptr;
    for (const auto& b : r.settings)
      if (b.name == r.baseline) base = &b;
    // Censored times are lower bounds: "before" is decided where the
    // setting's exact time is below the baseline's (exact or a lower bound),
    // "after" where its time (exact or a lower bound) is above the
    // baseline's exact one; anything else is unknown.
    const bool s_exact = s.reached == s.seeds, b_exact = base->reached == base->seeds;
    int faster = 0, slower = 0, unknown = 0;
    for (size_t i = 0; i < r.bandwidths.size(); ++i) {
      const double d = s.time_to_target[i] - base->time_to_target[i];
      if (!std::isfinite(d))
        ++unknown;
      else if (d < 0 && s_exact)
        ++faster;
      else if (d >= 0 && b_exact)
        ++slower;
      else
        ++unknown;
    }
    // Whether a run reaches a loss does not depend on the network: a setting
    // that misses the target misses it at every bandwidth.
    if (s.reached == 0 && base->reached == 0)
      md += "- " + s.name + ": no comparison (neither it nor " + r.baseline + " reaches " +
            format_number("%.4g", r.target_loss) + ").\n";
    else if (unknown > 0 && (!s_exact || !b_exact))
      md += "- " + s.name + ": no crossover can be placed (" + (s_exact ? r.baseline : s.name) + " reaches " +
            format_number("%.4g", r.target_loss) + " in " + std::to_string(s_exact ? base->reached : s.reached) +
            " of " + std::to_string(s_exact ? base->seeds : s.seeds) + " seeds, so its time is a lower bound; " +
            std::to_string(faster) + " bandwidths decided before, " + std::to_string(slower) + " after).\n";
    else if (slower == 0 && unknown == 0)
      md += "- " + s.name + " reaches the target before " + r.baseline + " at every bandwidth from " + range + ".\n";
    else if (faster == 0 && unknown == 0)
      md += "- " + s.name + " reaches the target after " + r.baseline + " at every bandwidth from " + range + ".\n";
    else
      md += "- " + s.name + ": no crossover where both reach the target (" + std::to_string(unknown) +
            " grid points without a time).\n";
  }
  return md;
}

bool has_timing_traces(const std::vector<std::string>& run_dirs) {
  for (const auto& d : run_dirs)
    if (!std::filesystem::exists(timing_trace_path(d, 0))) return false;
  return true;
}

std::vector<double> default_grid_bandwidths() { return log_grid(125e3, 12.5e9, 2); }
std::vector<double> default_grid_latencies() { return {0.0, 1e-3, 10e-3, 30e-3, 100e-3}; }

NetworkGrid network_grid(const std::vector<std::string>& run_dirs, const std::vector<double>& bandwidths,
                         const std::vector<double>& latencies) {
  NetworkGrid grid;
  if (!has_timing_traces(run_dirs)) return grid;
  grid.bandwidths = bandwidths;
  grid.latencies = latencies;
  for (const auto& d : run_dirs) {
    const RunRetimer retimer(d);
    NetworkGrid::Run run;
    run.dir = d;
    for (double bw : bandwidths)
      for (double lat : latencies) {
        const RunData r = as_run_data(retimer.retime(network_overrides(bw, lat)), d);
        run.eval_time.push_back(r.eval_time);
        run.sim_seconds.push_back(r.sim_seconds);
        run.utilisation.push_back(r.utilisation);
      }
    grid.runs.push_back(std::move(run));
  }
  return grid;
}

}  // namespace atl
