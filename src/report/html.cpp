// The HTML report: one self-contained page with Chart.js inlined. The page
// is assembled here; its summary tables (readable with scripts off) are
// summary_table.cpp's, a preset's claims claims_section.cpp's, its charts
// (drawn by a short script from the runs' series, embedded as JSON)
// charts.cpp's, and the what-if network panel (sliders that retime the runs
// in the page) network_sliders.cpp's.
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
#include "report/charts.h"
#include "report/claims_section.h"
#include "report/groups.h"
#include "report/html_text.h"
#include "report/network_sliders.h"
#include "report/summary_table.h"
#include "report/target_loss.h"
#include "util/file_io.h"
#include "util/format.h"

namespace atl {

extern const char* const kChartJsVersion;
extern const char* const kChartJsSource;

namespace {

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
.wide { overflow-x: auto; }
)css";

// Which loss "time to loss" means, and which rule chose it (a reader
// comparing the column needs both).
std::string target_paragraph(const TargetLoss& t) {
  const char* rule = t.rule == TargetLoss::Given      ? "given"
                     : t.rule == TargetLoss::Baseline ? "baseline"
                                                      : "baseline-final";
  std::string o = "<p class=\"sub\" id=\"target\" data-target=\"" + format_double_exact(t.value) + "\" data-rule=\"" +
                  rule + "\">Time to loss <b>" + format_target_loss(t.value) +
                  "</b> is the simulated time of the first evaluation after step 0 at or below it. The target is ";
  if (t.rule == TargetLoss::Given) return o + "the one " + escape_html(t.why) + ".</p>\n";
  return o + escape_html(t.why) +
         ", as none was given (<code>--target-loss</code>, or <code>target_loss</code> in a "
         "preset's [sweep]).</p>\n";
}

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
                                       " worker-steps (budget " +
                                       format_number("%.3g", options.network_sliders_budget) +
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
  const TargetLoss target = choose_target_loss(*base, options);

  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << escape_html(options.title)
    << "</title>\n<style>" << kStyle << kSummaryStyle << kClaimsStyle << "</style>\n</head><body>\n<h1>"
    << escape_html(options.title) << "</h1>\n";
  if (!options.subtitle.empty()) o << "<p class=\"sub\">" << escape_html(options.subtitle) << "</p>\n";
  o << "<p class=\"sub\">" << runs.size() << " runs";
  if (groups.size() < runs.size())
    o << " (" << groups.size()
      << " settings; figures are means over seeds &plusmn; the half-width of their 95% "
         "Student-t interval, left out when it is narrower than the last digit shown, and differences are paired "
         "over shared seeds: <i>significant</i> when the interval excludes 0, else <i>inconclusive</i>)";
  o << "; final eval loss compared with <b>" << escape_html(base->name) << "</b>.</p>\n" << target_paragraph(target);
  const NetworkSliders sliders = network_sliders(runs, groups, *base, target.value, options);
  o << sliders.panel_html() << summary_tables(groups, *base, ddp, target, sliders) << claims_section_html(options);
  o << "<div class=\"grid\">\n" << chart_boxes_html(sliders.chart_html()) << "</div>\n";
  // One column per run: many runs scroll inside their box, not the page.
  o << "<h2>Configuration keys that differ between runs</h2>\n<div class=\"wide\">" << config_diff_table(runs)
    << "</div>\n";
  o << "<details><summary>Configuration shared by every run</summary><pre>" << shared_config(runs)
    << "</pre></details>\n";
  o << "<p class=\"sub\">Run folders: ";
  for (size_t i = 0; i < runs.size(); ++i) o << (i ? ", " : "") << "<code>" << escape_html(runs[i].dir) << "</code>";
  o << ". Charts: Chart.js " << kChartJsVersion << " (MIT), inlined.</p>\n";
  o << "<script type=\"application/json\" id=\"atoll-charts\">" << script_safe(charts_json().dump())
    << "</script>\n<script type=\"application/json\" id=\"atoll-data\">" << script_safe(series_json(groups).dump())
    << "</script>\n<script>" << kChartJsSource << "</script>\n<script>" << kChartScript << "</script>\n"
    << sliders.script_html() << "</body></html>\n";
  return o.str();
}

TargetLoss write_html_report(const std::vector<std::string>& run_dirs, const std::string& out_path,
                             const ReportOptions& options) {
  std::vector<RunData> runs;
  for (const auto& d : run_dirs) runs.push_back(load_run(d));
  const std::string html = html_report(runs, options);
  const std::filesystem::path out(out_path);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  write_file_atomic(out_path, html);
  return choose_target_loss(runs, options);
}

}  // namespace atl
