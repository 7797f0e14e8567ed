// The report's "What-if network" panel: the grid of retimed runs as JSON,
// the sliders, the crossover chart and the script that applies a grid point
// (see network_sliders.h).
#include "report/network_sliders.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "atoll/net.h"
#include "report/html_text.h"
#include "util/format.h"
#include "util/stats.h"

namespace atl {
namespace {

// A config value as TOML text ("\"1Gbit/s\"") without its quotes.
std::string unquoted(const std::string& toml) {
  if (toml.size() >= 2 && toml.front() == '"' && toml.back() == '"') return toml.substr(1, toml.size() - 2);
  return toml;
}

std::string config_text(const RunData& run, const std::string& key) {
  auto it = run.config.find(key);
  return it == run.config.end() ? std::string() : unquoted(it->second);
}

template <class Distance>
size_t nearest(const std::vector<double>& grid, double value, Distance distance) {
  size_t best = 0;
  for (size_t i = 1; i < grid.size(); ++i)
    if (distance(grid[i], value) < distance(grid[best], value)) best = i;
  return best;
}

// Applies a grid point to the table and the wall-clock chart, and draws the
// crossover chart. Every figure mirrors the C++ tables: time to loss is the
// first evaluation after step 0 at or below the target (time_to_loss), a
// seed that misses it censored at its end, and a setting's figure the mean
// with its 95% Student-t half-width, or "≥ mean (k of n reached)" when a seed
// missed (target_time.h). The crossover
// chart, like atoll whatif, gives a setting a time only where every seed
// reached the target (a mean over the fast seeds alone would flatter it),
// else a gap.
const char* kNetworkScript = R"js(
(function () {
  const net = JSON.parse(document.getElementById('atoll-network').textContent);
  const series = JSON.parse(document.getElementById('atoll-data').textContent);
  const panel = document.getElementById('whatif');
  const bwInput = document.getElementById('whatif-bandwidth'), latInput = document.getElementById('whatif-latency');
  const status = document.getElementById('whatif-status');
  const L = net.latencies.length;
  const lossTime = Chart.getChart('loss-time');
  const timeTitle = lossTime ? lossTime.options.scales.x.title.text : '';
  // Each setting keeps the colour the other charts gave it.
  function colour(k) {
    const d = lossTime && lossTime.data.datasets.find((s) => s.group === k);
    return d ? d.borderColor : '#555555';
  }

  function meanInterval(v) {  // util/stats mean_interval: t * sd / sqrt(n)
    const n = v.length;
    if (n === 0) return {n, mean: NaN, half: NaN};
    let sum = 0;
    for (const x of v) sum += x;
    const mean = sum / n;
    if (n < 2) return {n, mean, half: NaN};
    let squares = 0;
    for (const x of v) squares += (x - mean) * (x - mean);
    return {n, mean, half: net.t95[n] * Math.sqrt(squares / (n - 1)) / Math.sqrt(n)};
  }
  // printf's "%.3g" for 0 <= v < 1 (as the C++ tables print): exponent form below 1e-4.
  function g3(v) {
    const rounded = Number(v.toPrecision(3));
    if (rounded === 0 || rounded >= 1e-4) return String(rounded);
    const [m, e] = v.toExponential(2).split('e');
    return m.replace(/\.?0+$/, '') + 'e-' + String(-Number(e)).padStart(2, '0');
  }
  // printf's "%.Ke": a two-digit exponent at least.
  function cExp(v, k) {
    const [m, e] = v.toExponential(k).split('e');
    const n = Number(e);
    return m + 'e' + (n < 0 ? '-' : '+') + String(Math.abs(n)).padStart(2, '0');
  }
  const exponentOf = (v, significant) => Number(v.toExponential(significant - 1).split('e')[1]);
  // The last digit of a printed number, read off its text (figure_text.cpp's last_digit_of).
  function lastDigitOf(text) {
    const [m, e] = text.split('e');
    const dot = m.indexOf('.');
    return Math.pow(10, Number(e || 0) - (dot < 0 ? 0 : m.length - dot - 1));
  }
  // A duration with its interval, as figure_text.cpp's seconds_figure: the
  // unit and precision chosen by the mean, the interval in the same unit to
  // the same last digit, and left out when it would read 0 there.
  function secondsPm(m) {
    if (m.mean < 0) return 'never';
    const [scale, unit, significant, digits] = m.mean >= 3600 ? [3600, 'h', false, 2]
                                             : m.mean >= 120 ? [60, 'min', false, 1]
                                             : m.mean < 1 ? [1, 's', true, 3] : [1, 's', false, 1];
    const v = m.mean / scale, half = m.half / scale;
    const text = significant ? g3(v) : v.toFixed(digits);
    const last = significant && v === 0 ? 0 : lastDigitOf(text);
    let interval = '';
    if (Number.isFinite(half) && half > 0) {
      if (last === 0) interval = g3(half);
      else if (half >= 0.5 * last) {
        const lastExponent = Math.round(Math.log10(last));
        interval = text.includes('e') ? cExp(half, Math.max(0, exponentOf(half, 1) - lastExponent))
                                      : half.toFixed(Math.max(0, -lastExponent));
      }
    }
    return text + ' ' + unit + (interval ? ' \u00b1 ' + interval + ' ' + unit : '');
  }
  function timeToLoss(run, times) {
    // A NaN loss is null in JSON, and null <= target would hold: it never reaches the target.
    for (let i = 0; i < run.eval_loss.length; ++i)
      if (run.eval_step[i] > 0 && run.eval_loss[i] !== null && run.eval_loss[i] <= net.target) return times[i];
    return -1;
  }
  // A setting (group of seeds) at grid point p.
  function figures(g, p) {
    // A seed that misses the target is censored at its end (target_time.cpp).
    const times = [], total = [], util = [];
    let reached = 0;
    for (const r of g.runs) {
      const run = net.runs[r];
      const t = net.target > 0 ? timeToLoss(run, run.eval_time[p]) : -1;
      if (t >= 0) ++reached;
      times.push(t >= 0 ? t : run.sim_seconds[p]);
      total.push(run.sim_seconds[p]);
      util.push(run.utilisation[p]);
    }
    return {ttt: meanInterval(times), reached: reached, seeds: g.runs.length, total: meanInterval(total),
            util: meanInterval(util)};
  }
  // The wall-clock chart's x: the mean over seeds of each evaluation's time,
  // at the evaluations every seed has (as the page's series).
  function evalTimes(g, p) {
    let n = Infinity;
    for (const r of g.runs) n = Math.min(n, net.runs[r].eval_time[p].length, net.runs[r].eval_loss.length);
    const x = [];
    for (let i = 0; i < n; ++i) {
      let sum = 0;
      for (const r of g.runs) sum += net.runs[r].eval_time[p][i];
      x.push(sum / g.runs.length);
    }
    return x;
  }

  const cells = [...document.querySelectorAll('[data-whatif]')];
  const recorded = cells.map((c) => ({html: c.innerHTML, value: c.dataset.value}));
  // The figure on one line, a note (how many seeds reached it) on its own, as summary_table.cpp writes them.
  function setCell(c, text, value, note) {
    c.textContent = text;
    if (note) {
      const detail = document.createElement('span');
      detail.className = 'detail';
      detail.textContent = note;
      c.append(document.createElement('br'), detail);
    }
    c.dataset.value = String(value);
  }
  function setWallClock(xOf, suffix) {
    if (!lossTime) return;
    for (const d of lossTime.data.datasets) {
      const s = series[d.group].loss_time, x = xOf(d.group), y = s[d.edge];
      d.data = x.map((xi, j) => ({x: xi, y: y[j]}));
    }
    lossTime.options.scales.x.title.text = timeTitle + suffix;
    lossTime.update();
  }

  // Apply grid point (bi, li) everywhere.
  function apply(bi, li) {
    const p = bi * L + li;
    const f = net.groups.map((g) => figures(g, p));
    for (const c of cells) {
      const k = Number(c.dataset.setting), g = f[k];
      if (c.dataset.whatif === 'total') setCell(c, secondsPm(g.total), g.total.mean);
      else if (c.dataset.whatif === 'util') setCell(c, (100 * g.util.mean).toFixed(1) + '%', g.util.mean);
      else if (g.reached < g.seeds)  // a lower bound: no interval (target_times_text)
        setCell(c, '\u2265 ' + secondsPm({mean: g.ttt.mean, half: NaN}) + ' (' + g.reached + ' of ' + g.seeds +
                       ' reached)', g.ttt.mean);
      else setCell(c, secondsPm(g.ttt), g.ttt.mean);
      c.classList.add('retimed');
    }
    const where = net.bandwidth_labels[bi] + ', ' + net.latency_labels[li] + ' latency';
    setWallClock((k) => evalTimes(net.groups[k], p), ', retimed to ' + where);
    panel.dataset.applied = 'grid';
    panel.dataset.bandwidth = String(net.bandwidths[bi]);
    panel.dataset.latency = String(net.latencies[li]);
    status.textContent = 'Showing every run retimed to ' + where + '. The table\u2019s simulated time, time to loss ' +
                         'and compute utilisation and the wall-clock chart are retimed (marked in blue).';
  }
  function showRecorded() {
    cells.forEach((c, i) => {
      c.innerHTML = recorded[i].html;
      c.dataset.value = recorded[i].value;
      c.classList.remove('retimed');
    });
    setWallClock((k) => series[k].loss_time.x, '');
    panel.dataset.applied = 'recorded';
    delete panel.dataset.bandwidth;
    delete panel.dataset.latency;
    status.textContent = 'Showing the runs as recorded (' + net.recorded + '); move a slider to retime them.';
  }

  // Time to loss against bandwidth (log-log, in bit/s) at one latency.
  const crossCanvas = document.getElementById('crossover');
  crossCanvas.closest('.chart').hidden = false;
  const crossover = new Chart(crossCanvas, {
    type: 'line',
    data: {datasets: net.groups.map((g, k) => ({label: g.name, group: k, data: [], borderColor: colour(k),
                                                 backgroundColor: colour(k), borderWidth: 1.5, tension: 0,
                                                 spanGaps: false}))},
    options: {
      animation: false, parsing: false, responsive: true, maintainAspectRatio: false,
      interaction: {mode: 'nearest', intersect: false},
      scales: {
        x: {type: 'logarithmic', title: {display: true, text: 'bandwidth (log)'},
            ticks: {callback: (v) => {
              const e = Math.round(Math.log10(v));
              if (Math.abs(Math.log10(v) - e) > 1e-9) return '';
              return e >= 9 ? Math.pow(10, e - 9) + ' Gbit/s' : e >= 6 ? Math.pow(10, e - 6) + ' Mbit/s'
                                                             : Math.pow(10, e - 3) + ' kbit/s';
            }, maxRotation: 0}},
        y: {type: 'logarithmic',
            title: {display: true, text: 'simulated time to loss ' + net.target_label + ' (s, log)'},
            ticks: {callback: (v) => {  // 1, 2 and 5 of each decade
              const lead = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
              return [1, 2, 5].some((d) => Math.abs(lead - d) < 1e-6) ? Number(v.toPrecision(3)) + ' s' : '';
            }}},
      },
      plugins: {legend: {position: 'bottom'}},
    },
  });
  function drawCrossover(bi, li) {
    crossover.data.datasets.forEach((d, k) => {
      const g = net.groups[k];
      d.data = net.bandwidths.map((b, j) => {
        const f = figures(g, j * L + li);
        return {x: 8 * b, y: f.seeds > 0 && f.reached === f.seeds && f.ttt.mean > 0 ? f.ttt.mean : null};
      });
      // The slider's bandwidth stands out on every line.
      d.pointRadius = net.bandwidths.map((_, j) => (j === bi ? 5 : 2));
    });
    crossover.options.scales.x.title.text = 'bandwidth (log), at ' + net.latency_labels[li] + ' latency';
    crossover.update();
  }

  function readouts() {
    document.getElementById('whatif-bandwidth-value').textContent = net.bandwidth_labels[bwInput.value];
    document.getElementById('whatif-latency-value').textContent = net.latency_labels[latInput.value];
  }
  function moved() {
    readouts();
    apply(Number(bwInput.value), Number(latInput.value));
    drawCrossover(Number(bwInput.value), Number(latInput.value));
  }
  bwInput.addEventListener('input', moved);
  latInput.addEventListener('input', moved);
  document.getElementById('whatif-recorded').addEventListener('click', () => {
    bwInput.value = String(net.start[0]);
    latInput.value = String(net.start[1]);
    readouts();
    showRecorded();
    drawCrossover(net.start[0], net.start[1]);
  });
  panel.hidden = false;
  showRecorded();
  drawCrossover(net.start[0], net.start[1]);
  panel.dataset.ready = 'true';
  document.body.dataset.charts = String(Number(document.body.dataset.charts || 0) + 1);
})();
)js";

}  // namespace

NetworkGrid report_network_grid(const std::vector<RunData>& runs) {
  std::vector<std::string> dirs;
  for (const auto& r : runs) dirs.push_back(r.dir);
  return network_grid(dirs, default_grid_bandwidths(), default_grid_latencies());
}

GridPoint nearest_grid_point(const NetworkGrid& grid, const RunData& run) {
  GridPoint p{grid.bandwidths.size() / 2, grid.latencies.size() / 2};
  const std::string bandwidth = config_text(run, "network.bandwidth"), latency = config_text(run, "network.latency");
  // Bandwidth by ratio (the slider's steps are a log grid); latency by difference (its grid holds 0).
  if (!bandwidth.empty() && !grid.bandwidths.empty())
    p.bandwidth = nearest(grid.bandwidths, parse_bandwidth(bandwidth),
                          [](double a, double b) { return std::abs(std::log(a / b)); });
  if (!latency.empty() && !grid.latencies.empty())
    p.latency = nearest(grid.latencies, parse_duration(latency), [](double a, double b) { return std::abs(a - b); });
  return p;
}

std::string format_latency(double s) {
  if (s == 0) return "0 ms";
  if (s < 1) return format_number("%.3g ms", s * 1e3);
  return format_number("%.3g s", s);
}

NetworkSliders::NetworkSliders(NetworkGrid grid, const std::vector<RunData>& runs, const std::vector<RunGroup>& groups,
                               const RunGroup& base, double target_loss) {
  if (grid.runs.empty()) return;
  if (grid.runs.size() != runs.size())
    throw std::logic_error("network sliders: the grid has " + std::to_string(grid.runs.size()) + " runs for " +
                           std::to_string(runs.size()));
  const size_t points = grid.bandwidths.size() * grid.latencies.size();
  nlohmann::json json_runs = nlohmann::json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    const NetworkGrid::Run& g = grid.runs[i];
    if (g.dir != runs[i].dir || g.eval_time.size() != points || g.sim_seconds.size() != points ||
        g.utilisation.size() != points)
      throw std::logic_error("network sliders: the grid does not match run '" + runs[i].dir + "'");
    json_runs.push_back({{"name", runs[i].name},
                         {"eval_step", runs[i].eval_step},
                         {"eval_loss", runs[i].eval_loss},
                         {"eval_time", g.eval_time},
                         {"sim_seconds", g.sim_seconds},
                         {"utilisation", g.utilisation}});
  }
  nlohmann::json json_groups = nlohmann::json::array();
  size_t most_seeds = 1;
  for (const auto& g : groups) {
    nlohmann::json members = nlohmann::json::array();
    for (const RunData* r : g.runs) members.push_back(size_t(r - runs.data()));
    json_groups.push_back({{"name", g.name}, {"runs", members}});
    most_seeds = std::max(most_seeds, g.runs.size());
  }
  // The Student-t quantiles the page needs, by number of seeds (index n).
  std::vector<double> t95(most_seeds + 1, 0.0);
  for (size_t n = 2; n <= most_seeds; ++n) t95[n] = student_t_quantile(0.95, double(n - 1));

  const RunData& reference = *base.runs.front();
  start_ = nearest_grid_point(grid, reference);
  for (double b : grid.bandwidths) bandwidth_labels_.push_back(format_bit_rate(b));
  for (double l : grid.latencies) latency_labels_.push_back(format_latency(l));
  const std::string bandwidth = config_text(reference, "network.bandwidth");
  const std::string latency = config_text(reference, "network.latency");
  const bool alike = std::all_of(runs.begin(), runs.end(), [&](const RunData& r) {
    return config_text(r, "network.bandwidth") == bandwidth && config_text(r, "network.latency") == latency;
  });
  recorded_ = "network.bandwidth " + bandwidth + ", network.latency " + latency;
  if (!alike) recorded_ = "each run on its own network; the sliders start at " + base.name + "'s, " + recorded_;

  const nlohmann::json data = {{"bandwidths", grid.bandwidths},
                               {"latencies", grid.latencies},
                               {"bandwidth_labels", bandwidth_labels_},
                               {"latency_labels", latency_labels_},
                               {"start", {start_.bandwidth, start_.latency}},
                               {"target", target_loss},
                               {"target_label", format_target_loss(target_loss)},
                               {"t95", t95},
                               {"recorded", recorded_},
                               {"groups", json_groups},
                               {"runs", json_runs}};
  data_ = data.dump();
}

NetworkSliders NetworkSliders::unavailable(const std::string& why) {
  NetworkSliders s;
  s.error_ = why;
  return s;
}

std::string NetworkSliders::panel_html() const {
  if (!error_.empty())
    return "<p class=\"note\" id=\"whatif-unavailable\">What-if network sliders unavailable: " + escape_html(error_) +
           "</p>\n";
  if (!active()) return "";
  std::ostringstream o;
  auto slider = [&](const char* id, const char* label, const std::vector<std::string>& labels, size_t at) {
    o << "<label>" << label << " <input type=\"range\" id=\"whatif-" << id << "\" min=\"0\" max=\"" << labels.size() - 1
      << "\" step=\"1\" value=\"" << at << "\"> <output id=\"whatif-" << id << "-value\">" << escape_html(labels[at])
      << "</output></label>\n";
  };
  o << "<section id=\"whatif\" class=\"whatif\" hidden><b>What-if network</b>\n";
  slider("bandwidth", "bandwidth", bandwidth_labels_, start_.bandwidth);
  slider("latency", "latency", latency_labels_, start_.latency);
  o << "<button type=\"button\" id=\"whatif-recorded\">as recorded</button>\n"
    << "<p id=\"whatif-status\"></p>\n<p class=\"note\">Each run replayed by atoll retime with network.bandwidth and "
       "network.latency set to the sliders' values (exact: a fresh run there would show the same events; its other "
       "links, jitter and compute stay as recorded). Grid: "
    << escape_html(bandwidth_labels_.front()) << " to " << escape_html(bandwidth_labels_.back()) << ", "
    << escape_html(latency_labels_.front()) << " to " << escape_html(latency_labels_.back()) << ".</p>\n</section>\n";
  return o.str();
}

std::string NetworkSliders::chart_html() const {
  if (!active()) return "";
  return "<div class=\"chart\" hidden><h2>Time to loss against bandwidth (what-if; gaps: a seed does not reach "
         "it)</h2><div class=\"box\"><canvas id=\"crossover\"></canvas></div></div>\n";
}

std::string NetworkSliders::script_html() const {
  if (!active()) return "";
  return "<script type=\"application/json\" id=\"atoll-network\">" + script_safe(data_) + "</script>\n<script>" +
         kNetworkScript + "</script>\n";
}

std::string NetworkSliders::cell(const char* kind, size_t setting, double value) const {
  if (!active()) return "";
  return std::string(" data-whatif=\"") + kind + "\" data-setting=\"" + std::to_string(setting) + "\" data-value=\"" +
         format_double_exact(value) + "\"";
}

}  // namespace atl
