// The report's chart table, the series it draws and the script that draws
// them (charts.h).
#include "report/charts.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

#include "report/html_text.h"
#include "util/stats.h"

namespace atl {
namespace {

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

constexpr const char* kOneWorker = "one worker or not logged";

}  // namespace

const std::vector<ReportChart>& report_charts() {
  static const std::vector<ReportChart> charts = {
      {"loss-steps", "Eval loss against steps", "loss_steps", &RunData::eval_step, &RunData::eval_loss, "step",
       "eval loss", false, "all", "", false},
      {"loss-bytes", "Eval loss against bytes sent per worker", "loss_bytes", &RunData::eval_bytes, &RunData::eval_loss,
       "bytes sent per worker (log)", "eval loss", true, "positive-x", "no bytes sent", false},
      {"loss-time", "Eval loss against simulated wall-clock", "loss_time", &RunData::eval_time, &RunData::eval_loss,
       "simulated wall-clock (s)", "eval loss", false, "all", "", true},
      {"corr-steps", "Parameter correlation between workers", "corr_steps", &RunData::corr_step, &RunData::corr, "step",
       "mean pairwise parameter correlation", false, "all", kOneWorker, false},
      {"update-corr-steps", "Correlation of the workers' updates since the start", "update_corr_steps",
       &RunData::corr_step, &RunData::update_corr, "step", "mean pairwise correlation of updates", false, "finite-y",
       kOneWorker, false},
      {"disagreement-steps", "Relative disagreement: ‖θ_i − θ̄‖ / ‖θ̄ − θ_0‖", "disagreement_steps", &RunData::corr_step,
       &RunData::disagreement, "step", "relative disagreement", false, "finite-y", kOneWorker, false},
  };
  return charts;
}

nlohmann::json charts_json() {
  nlohmann::json all = nlohmann::json::array();
  for (const ReportChart& c : report_charts())
    all.push_back({{"id", c.id},
                   {"series", c.series},
                   {"xTitle", c.x_title},
                   {"yTitle", c.y_title},
                   {"log", c.log_x},
                   {"keep", c.keep},
                   {"omitted", c.omitted}});
  return all;
}

nlohmann::json series_json(const std::vector<RunGroup>& groups) {
  nlohmann::json all = nlohmann::json::array();
  for (const auto& g : groups) {
    nlohmann::json s = {{"name", g.name}, {"seeds", g.runs.size()}, {"strategy", g.runs.front()->strategy}};
    for (const ReportChart& c : report_charts()) s[c.series] = mean_series(g, c.x, c.y);
    all.push_back(std::move(s));
  }
  return all;
}

std::string chart_boxes_html(const std::string& after_retimed) {
  std::ostringstream o;
  for (const ReportChart& c : report_charts()) {
    o << "<div class=\"chart\"><h2>" << escape_html(c.title) << "</h2><div class=\"box\"><canvas id=\"" << c.id
      << "\"></canvas></div></div>\n";
    if (c.retimed) o << after_retimed;
  }
  return o.str();
}

// Series without points on a chart (no traffic on the log bytes axis, one
// worker for correlation) are left out and listed under it.
const char* const kChartScript = R"js(
(function () {
  const runs = JSON.parse(document.getElementById('atoll-data').textContent);
  const charts = JSON.parse(document.getElementById('atoll-charts').textContent);
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2',
                   '#17becf', '#bcbd22', '#7f7f7f', '#393b79', '#637939', '#8c6d31', '#843c39'];
  // The table's `keep` rules (charts.cpp).
  const keeps = {'all': () => true, 'positive-x': (x) => x > 0, 'finite-y': (x, y) => Number.isFinite(y)};
  function points(xs, ys, keep) {
    const out = [];
    for (let i = 0; i < xs.length; ++i) if (keep(xs[i], ys[i])) out.push({x: xs[i], y: ys[i]});
    return out;
  }
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
    const keep = keeps[c.keep];
    const datasets = [], left = [];
    runs.forEach((r, i) => {
      // Each series: {x, y (mean over seeds), low, high (95% band)}.
      const s = r[c.series], color = palette[i % palette.length];
      const data = points(s.x, s.y, keep);
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
        datasets.push(Object.assign({label: r.name + ' low', data: points(s.x, s.low, keep), fill: false,
                                     group: i, edge: 'low'}, band));
        datasets.push(Object.assign({label: r.name + ' high', data: points(s.x, s.high, keep), fill: '-1',
                                     group: i, edge: 'high'}, band));
      }
    });
    const canvas = document.getElementById(c.id);
    if (left.length) {
      const note = document.createElement('p');
      note.className = 'omitted';
      note.textContent = 'Not drawn (' + (c.omitted || 'no points') + '): ' + left.join(', ');
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

}  // namespace atl
