// The HTML report: one self-contained page with Chart.js inlined. The tables
// are rendered here (readable with scripts off); the charts are drawn by a
// short script from the runs' series, embedded as JSON. The what-if network
// panel (sliders that retime the runs in the page) is network_sliders.cpp's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "atoll/report.h"
#include "report/groups.h"
#include "report/html_text.h"
#include "report/network_sliders.h"
#include "util/file_io.h"
#include "util/format.h"

namespace atl {

extern const char* const kChartJsVersion;
extern const char* const kChartJsSource;

namespace {

// Under a second, three significant digits: a tiny run's modelled times
// (tens of milliseconds) would all read "0.0 s". The what-if script formats
// its retimed cells the same way.
std::string seconds(double s) {
  if (s < 0) return "never";
  if (s >= 3600) return format_number("%.2f h", s / 3600);
  if (s >= 120) return format_number("%.1f min", s / 60);
  if (s < 1) return format_number("%.3g s", s);
  return format_number("%.1f s", s);
}

// Whether an interval is worth printing: figures every seed gives alike
// (modelled times) show no "± 0", nor the rounding noise of summing them in
// another order ("± 2e-14 s").
bool shows_interval(const MeanInterval& m) {
  return m.has_interval() && m.half_width > 1e-9 * std::abs(m.mean);
}

// "1.6512 ± 0.0031" as HTML, or the mean alone for one seed.
std::string mean_pm(const MeanInterval& m, const char* fmt) {
  std::string out = format_number(fmt, m.mean);
  if (shows_interval(m)) out += " &plusmn; " + format_number(fmt, m.half_width);
  return out;
}

std::string seconds_pm(const MeanInterval& m) {
  std::string out = seconds(m.mean);
  if (shows_interval(m)) out += " &plusmn; " + seconds(m.half_width);
  return out;
}

// One row per setting: the mean over its seeds ± the 95% interval; against
// the baseline, the paired difference over shared seeds.
// The cells the network sliders rewrite carry sliders.cell(...) marks.
std::string summary_table(const std::vector<RunGroup>& groups, const RunGroup& base, const RunGroup* ddp,
                          double target, const NetworkSliders& sliders) {
  const GroupFigures fb = group_figures(base, target);
  const GroupFigures* fd = nullptr;
  GroupFigures ddp_figures;
  if (ddp) {
    ddp_figures = group_figures(*ddp, target);
    fd = &ddp_figures;
  }
  std::ostringstream o;
  o << "<table id=\"summary\"><thead><tr><th>run</th><th>seeds</th><th>strategy</th><th>N</th><th>steps</th>"
       "<th>final eval loss</th><th>perplexity</th><th>vs "
    << escape_html(base.name)
    << " (paired)</th><th>sent per worker (MB)</th><th>sent, all workers (MB)</th><th>communication reduction vs "
    << (ddp ? escape_html(ddp->name) : std::string("DDP")) << "</th><th>simulated time</th><th>time to loss "
    << format_number("%.3f", target) << "</th><th>compute utilisation</th><th>final correlation</th>"
       "<th>update correlation</th><th>disagreement</th></tr></thead><tbody>\n";
  // Agreement figures are undefined (NaN) for one worker or older runs.
  auto figure = [](const MeanInterval& m, const char* format) {
    return std::isfinite(m.mean) ? mean_pm(m, format) : std::string("&mdash;");
  };
  for (const auto& g : groups) {
    const RunData& r = *g.runs.front();
    const size_t k = size_t(&g - groups.data());
    const GroupFigures f = group_figures(g, target);
    std::string versus = "&mdash;";
    if (&g != &base) {
      const MeanInterval d = paired_loss_difference(g, base);
      versus = format_paired_difference(d, fb.loss.mean, "&plusmn;");
      if (d.has_interval())
        versus += " <span class=\"" + difference_verdict(d) + "\">" + difference_verdict(d) + "</span>";
    }
    std::string reduction = "&mdash;";
    if (fd && fd->bytes_per_worker.mean > 0) {
      if (f.bytes_per_worker.mean <= 0)
        reduction = "no traffic";
      else
        reduction = format_number("%.3g&times;", fd->bytes_per_worker.mean / f.bytes_per_worker.mean);
    }
    std::string ttt = "never";
    if (f.reached > 0) {
      ttt = seconds_pm(f.time_to_target);
      if (f.reached < f.seeds) ttt += format_number(" (%.0f", double(f.reached)) + format_number(" of %.0f seeds)", double(f.seeds));
    }
    o << "<tr" << (&g == &base ? " class=\"baseline\"" : "") << "><td>" << escape_html(g.name) << "</td><td>"
      << f.seeds << "</td><td>" << escape_html(r.strategy) << "</td><td>" << escape_html(workers_label(r)) << "</td><td>" << r.steps
      << "</td><td>" << mean_pm(f.loss, "%.4f") << "</td><td>" << mean_pm(f.ppl, "%.3f") << "</td><td>" << versus
      << "</td><td>" << format_megabytes(f.bytes_per_worker.mean) << "</td><td>" << format_megabytes(f.bytes_total.mean)
      << "</td><td>" << reduction << "</td><td" << sliders.cell("total", k, f.sim_seconds.mean) << ">"
      << seconds_pm(f.sim_seconds) << "</td><td" << sliders.cell("ttt", k, f.reached > 0 ? f.time_to_target.mean : -1)
      << ">" << ttt << "</td><td" << sliders.cell("util", k, f.utilisation.mean) << ">"
      << format_number("%.1f%%", 100 * f.utilisation.mean) << "</td><td>"
      << (r.has_correlation && r.workers > 1 ? format_number("%.4f", f.correlation.mean) : std::string("&mdash;"))
      << "</td><td>" << figure(f.update_correlation, "%.4f") << "</td><td>" << figure(f.disagreement, "%.4g")
      << "</td></tr>\n";
  }
  o << "</tbody></table>\n";
  std::vector<std::pair<std::string, const RunData*>> all;
  for (const auto& g : groups) all.emplace_back(g.name, g.runs.front());
  const std::string islands = islands_note(all);
  if (!islands.empty()) o << "<p class=\"note\">" << escape_html(islands) << "</p>\n";
  return o.str();
}

std::string config_diff_table(const std::vector<RunData>& runs) {
  std::set<std::string> keys;
  for (const auto& r : runs)
    for (const auto& [k, v] : r.config) keys.insert(k);
  std::vector<std::string> differing;
  for (const auto& k : keys) {
    std::set<std::string> values;
    for (const auto& r : runs) {
      auto it = r.config.find(k);
      values.insert(it == r.config.end() ? "" : it->second);
    }
    if (values.size() > 1) differing.push_back(k);
  }
  std::ostringstream o;
  if (differing.empty()) return "<p id=\"config-diff\">Every run has the same configuration.</p>\n";
  o << "<table id=\"config-diff\"><thead><tr><th>key</th>";
  for (const auto& r : runs) o << "<th>" << escape_html(r.name) << "</th>";
  o << "</tr></thead><tbody>\n";
  for (const auto& k : differing) {
    o << "<tr><td><code>" << escape_html(k) << "</code></td>";
    for (const auto& r : runs) {
      auto it = r.config.find(k);
      o << "<td>" << (it == r.config.end() ? "&mdash;" : escape_html(it->second)) << "</td>";
    }
    o << "</tr>\n";
  }
  o << "</tbody></table>\n";
  return o.str();
}

std::string shared_config(const std::vector<RunData>& runs) {
  // Keys every run agrees on, for the reader who wants the whole setup.
  std::ostringstream o;
  for (const auto& [k, v] : runs.front().config) {
    bool same = true;
    for (const auto& r : runs) {
      auto it = r.config.find(k);
      same = same && it != r.config.end() && it->second == v;
    }
    if (same) o << escape_html(k) << " = " << escape_html(v) << "\n";
  }
  return o.str();
}

// Per setting, the mean of a series over its seeds at the points every seed
// has (same x index), with the 95% band; one seed gives the series itself.
// Undefined points (NaN: agreement before the workers moved) become null,
// which JSON can hold and the charts skip.
nlohmann::json mean_series(const RunGroup& g, std::vector<double> RunData::*xs, std::vector<double> RunData::*ys) {
  size_t n = SIZE_MAX;
  for (const RunData* r : g.runs) n = std::min({n, (r->*xs).size(), (r->*ys).size()});
  std::vector<double> x, mean, low, high;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> at_x, at_y;
    for (const RunData* r : g.runs) {
      at_x.push_back((r->*xs)[i]);
      at_y.push_back((r->*ys)[i]);
    }
    const MeanInterval my = mean_interval(at_y);
    x.push_back(mean_interval(at_x).mean);
    mean.push_back(my.mean);
    low.push_back(my.has_interval() ? my.low() : my.mean);
    high.push_back(my.has_interval() ? my.high() : my.mean);
  }
  auto finite_or_null = [](const std::vector<double>& values) {
    nlohmann::json out = nlohmann::json::array();
    for (double v : values) out.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
    return out;
  };
  return {{"x", x}, {"y", finite_or_null(mean)}, {"low", finite_or_null(low)}, {"high", finite_or_null(high)}};
}

nlohmann::json series_json(const std::vector<RunGroup>& groups) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& g : groups) {
    all.push_back({{"name", g.name},
                   {"seeds", g.runs.size()},
                   {"strategy", g.runs.front()->strategy},
                   {"loss_steps", mean_series(g, &RunData::eval_step, &RunData::eval_loss)},
                   {"loss_bytes", mean_series(g, &RunData::eval_bytes, &RunData::eval_loss)},
                   {"loss_time", mean_series(g, &RunData::eval_time, &RunData::eval_loss)},
                   {"corr_steps", mean_series(g, &RunData::corr_step, &RunData::corr)},
                   {"update_corr_steps", mean_series(g, &RunData::corr_step, &RunData::update_corr)},
                   {"disagreement_steps", mean_series(g, &RunData::corr_step, &RunData::disagreement)}});
  }
  return all;
}

// Draws the six charts from #atoll-data. Series without points on a chart
// (no traffic on the log bytes axis, one worker for correlation) are left
// out and listed under it. Sets body[data-charts] to the number drawn.
const char* kChartScript = R"js(
(function () {
  const runs = JSON.parse(document.getElementById('atoll-data').textContent);
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
                   '#17becf', '#bcbd22', '#7f7f7f', '#393b79', '#637939', '#8c6d31', '#843c39'];
  function points(xs, ys, keep) {
    const out = [];
    for (let i = 0; i < xs.length; ++i) if (keep(xs[i], ys[i])) out.push({x: xs[i], y: ys[i]});
    return out;
  }
  // Each series: {x, y (mean over seeds), low, high (95% band)}.
  const charts = [
    {id: 'loss-steps', s: 'loss_steps', xTitle: 'step', yTitle: 'eval loss', keep: () => true},
    {id: 'loss-bytes', s: 'loss_bytes', xTitle: 'bytes sent per worker (log)', yTitle: 'eval loss',
     log: true, keep: (x) => x > 0, omitted: 'no bytes sent'},
    {id: 'loss-time', s: 'loss_time', xTitle: 'simulated wall-clock (s)', yTitle: 'eval loss',
     keep: () => true},
    {id: 'corr-steps', s: 'corr_steps', xTitle: 'step', yTitle: 'mean pairwise parameter correlation',
     keep: () => true, omitted: 'one worker or not logged'},
    {id: 'update-corr-steps', s: 'update_corr_steps', xTitle: 'step',
     yTitle: 'mean pairwise correlation of updates', keep: (x, y) => Number.isFinite(y),
     omitted: 'one worker or not logged'},
    {id: 'disagreement-steps', s: 'disagreement_steps', xTitle: 'step',
     yTitle: 'relative disagreement', keep: (x, y) => Number.isFinite(y), omitted: 'one worker or not logged'},
  ];
  // Log-axis ticks at 1, 2 and 5 of each decade, as kB / MB / GB.
  function bytesLabel(v) {
    const lead = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
    if (![1, 2, 5].some((d) => Math.abs(lead - d) < 1e-6)) return '';
    const units = ['B', 'kB', 'MB', 'GB', 'TB'];
    let u = 0;
    while (v >= 1000 && u < units.length - 1) { v /= 1000; ++u; }
    return Number(v.toPrecision(3)) + ' ' + units[u];
  }
  let drawn = 0;
  for (const c of charts) {
    const datasets = [], left = [];
    runs.forEach((r, i) => {
      const s = r[c.s], color = palette[i % palette.length];
      const data = points(s.x, s.y, c.keep);
      if (data.length === 0) { left.push(r.name); return; }
      const label = r.seeds > 1 ? r.name + ' (mean of ' + r.seeds + ' seeds, 95% band)' : r.name;
      // group / edge: which setting and which of its series (mean y, band low / high) a dataset
      // draws, for the what-if sliders that replace its x values.
      datasets.push({label, data, borderColor: color, backgroundColor: color, pointRadius: 2, borderWidth: 1.5,
                     tension: 0, group: i, edge: 'y'});
      if (r.seeds > 1) {
        // The band: the low edge, then the high edge filled down to it, drawn
        // beneath every mean curve (order 1; Chart.js draws lower orders on top).
        const band = {borderWidth: 0, borderColor: color, pointRadius: 0, tension: 0, band: true, order: 1,
                      backgroundColor: color + '33'};
        datasets.push(Object.assign({label: r.name + ' low', data: points(s.x, s.low, c.keep), fill: false,
                                     group: i, edge: 'low'}, band));
        datasets.push(Object.assign({label: r.name + ' high', data: points(s.x, s.high, c.keep), fill: '-1',
                                     group: i, edge: 'high'}, band));
      }
    });
    const canvas = document.getElementById(c.id);
    if (left.length) {
      const note = document.createElement('p');
      note.className = 'omitted';
      note.textContent = 'Not drawn (' + c.omitted + '): ' + left.join(', ');
      canvas.parentElement.appendChild(note);
    }
    if (datasets.length === 0) { canvas.remove(); continue; }
    new Chart(canvas, {
      type: 'line',
      data: {datasets},
      options: {
        animation: false, parsing: false, responsive: true, maintainAspectRatio: false,
        interaction: {mode: 'nearest', intersect: false},
        scales: {x: {type: c.log ? 'logarithmic' : 'linear', title: {display: true, text: c.xTitle},
                     ticks: c.log ? {callback: (v) => bytesLabel(v), autoSkip: true, maxRotation: 0} : {}},
                 y: {title: {display: true, text: c.yTitle}}},
        plugins: {legend: {position: 'bottom', labels: {filter: (item, d) => !d.datasets[item.datasetIndex].band}}},
      },
    });
    ++drawn;
  }
  document.body.dataset.charts = String(drawn);
})();
)js";

const char* kStyle = R"css(
body { font: 14px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1400px; padding: 0 16px; color: #222; }
h1 { font-size: 22px; margin-bottom: 2px; } .sub { color: #555; margin-top: 0; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 18px; }
.chart { border: 1px solid #ddd; border-radius: 6px; padding: 10px; }
.chart h2 { font-size: 15px; margin: 0 0 6px; } .chart .box { position: relative; height: 340px; }
table { border-collapse: collapse; margin: 10px 0 24px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e3e3e3; padding: 4px 10px; text-align: right; }
th:first-child, td:first-child { text-align: left; } th { background: #f6f6f6; }
tr.baseline td { font-weight: 600; } .significant { color: #1a7f37; } .inconclusive { color: #9a6700; } .omitted { color: #777; font-size: 12px; margin: 4px 0 0; }
.whatif { position: sticky; top: 0; z-index: 5; background: #fff; border: 1px solid #cfd8e3; border-radius: 6px;
  padding: 8px 12px; margin: 10px 0; } .whatif label { margin-right: 18px; }
.whatif input { vertical-align: middle; width: 260px; }
.whatif output { display: inline-block; min-width: 6em; font-weight: 600; } .whatif p { margin: 4px 0; }
.whatif .note { color: #666; font-size: 12px; } td.retimed { color: #1f4fbf; }
pre { background: #f8f8f8; padding: 10px; font-size: 12px; max-height: 300px; overflow: auto; }
)css";

// The what-if panel when asked for and every run has timing traces. A grid
// that cannot be built (a broken trace) is reported on the page instead of
// failing the whole report.
NetworkSliders network_sliders(const std::vector<RunData>& runs, const std::vector<RunGroup>& groups,
                               const RunGroup& base, double target, const ReportOptions& options) {
  if (!options.network_sliders) return {};
  std::vector<std::string> dirs;
  for (const auto& r : runs) dirs.push_back(r.dir);
  if (!has_timing_traces(dirs)) return {};  // older run folders: the plain report
  double work = 0;
  for (const auto& r : runs) work += double(r.steps) * double(r.workers);
  work *= double(default_grid_bandwidths().size() * default_grid_latencies().size());
  if (options.network_sliders_budget > 0 && work > options.network_sliders_budget)
    return NetworkSliders::unavailable("the runs are long: the grid would replay " + format_number("%.3g", work) +
                                       " worker-steps (budget " + format_number("%.3g", options.network_sliders_budget) +
                                       "); atoll report --network-sliders-budget=0 builds it anyway");
  NetworkGrid grid;
  try {
    grid = report_network_grid(runs);
  } catch (const std::exception& e) {
    return NetworkSliders::unavailable(e.what());
  }
  return NetworkSliders(std::move(grid), runs, groups, base, target);
}

}  // namespace

std::string html_report(const std::vector<RunData>& runs, const ReportOptions& options) {
  if (runs.empty()) throw std::invalid_argument("a report needs at least one run folder");
  const std::vector<RunGroup> groups = group_by_seed(runs);
  const RunGroup* base = &reference_group(groups, options.baseline);
  const RunGroup* ddp = base->runs.front()->strategy == "ddp" ? base : ddp_group(groups);
  double target = options.target_loss;
  if (target <= 0)
    for (const auto& r : runs) target = std::max(target, r.final_val_loss);

  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << escape_html(options.title)
    << "</title>\n<style>" << kStyle << "</style>\n</head><body>\n<h1>" << escape_html(options.title) << "</h1>\n";
  if (!options.subtitle.empty()) o << "<p class=\"sub\">" << escape_html(options.subtitle) << "</p>\n";
  o << "<p class=\"sub\">" << runs.size() << " runs";
  if (groups.size() < runs.size())
    o << " (" << groups.size() << " settings; figures are means over seeds &plusmn; the half-width of their 95% "
         "Student-t interval, and differences are paired over shared seeds: <i>significant</i> when the interval "
         "excludes 0, else <i>inconclusive</i>)";
  o << "; final eval loss compared with <b>" << escape_html(base->name) << "</b>; time to loss "
    << format_number("%.3f", target) << " is the simulated time of the first evaluation after step 0 at or below it.</p>\n";
  const NetworkSliders sliders = network_sliders(runs, groups, *base, target, options);
  o << sliders.panel_html() << summary_table(groups, *base, ddp, target, sliders);
  o << "<div class=\"grid\">\n";
  const char* charts[][2] = {{"loss-steps", "Eval loss against steps"},
                             {"loss-bytes", "Eval loss against bytes sent per worker"},
                             {"loss-time", "Eval loss against simulated wall-clock"},
                             {"corr-steps", "Parameter correlation between workers"},
                             {"update-corr-steps", "Correlation of the workers' updates since the start"},
                             {"disagreement-steps", "Relative disagreement: ‖θ_i − θ̄‖ / ‖θ̄ − θ_0‖"}};
  for (const auto& c : charts) {
    o << "<div class=\"chart\"><h2>" << c[1] << "</h2><div class=\"box\"><canvas id=\"" << c[0]
      << "\"></canvas></div></div>\n";
    if (std::string(c[0]) == "loss-time") o << sliders.chart_html();  // beside the chart it explains
  }
  o << "</div>\n<h2>Configuration keys that differ between runs</h2>\n" << config_diff_table(runs);
  o << "<details><summary>Configuration shared by every run</summary><pre>" << shared_config(runs)
    << "</pre></details>\n";
  o << "<p class=\"sub\">Run folders: ";
  for (size_t i = 0; i < runs.size(); ++i) o << (i ? ", " : "") << "<code>" << escape_html(runs[i].dir) << "</code>";
  o << ". Charts: Chart.js " << kChartJsVersion << " (MIT), inlined.</p>\n";
  o << "<script type=\"application/json\" id=\"atoll-data\">" << script_safe(series_json(groups).dump())
    << "</script>\n<script>" << kChartJsSource << "</script>\n<script>" << kChartScript << "</script>\n"
    << sliders.script_html() << "</body></html>\n";
  return o.str();
}

void write_html_report(const std::vector<std::string>& run_dirs, const std::string& out_path,
                       const ReportOptions& options) {
  std::vector<RunData> runs;
  for (const auto& d : run_dirs) runs.push_back(load_run(d));
  const std::string html = html_report(runs, options);
  const std::filesystem::path out(out_path);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  write_file_atomic(out_path, html);
}

}  // namespace atl
