// RESULTS.md's figure of the final loss against one grid key
// (loss_against.h): which settings go where, the table, and the chart
// drawn as plain SVG so that the page needs no script to show it.
#include "experiment/loss_against.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <map>
#include <sstream>

#include "atoll/report.h"
#include "report/html_text.h"
#include "util/format.h"
#include "util/stats.h"

namespace atl {
namespace {

// One setting placed on the figure.
struct Point {
  std::string setting;
  std::string value;  // the key's value as the preset writes it ("" for a reference)
  double x = 0;       // its place on the x axis (before a log scale)
  MeanInterval loss;  // final eval loss over seeds
  double bytes = 0;   // mean bytes sent per worker
  int seeds = 0;
};

// The settings of the figure: lines (per runs entry the grid expands over
// the key, in the preset's order), lone points (settings that set the key
// on their own runs line) and references (settings without the key).
struct Placement {
  std::vector<std::pair<std::string, std::vector<Point>>> lines;
  std::vector<Point> lone, references;
  bool numeric = true, log_x = false;
  std::vector<std::string> categories;  // the values in order, when they are not all numbers
};

// The value `run` gives `key` on its own runs line (the last override wins), or "".
std::string own_value(const SweepRun& run, const std::string& key) {
  std::string value;
  for (const std::string& o : run.overrides)
    if (o.size() > key.size() && o.compare(0, key.size(), key) == 0 && o[key.size()] == '=')
      value = o.substr(key.size() + 1);
  return value;
}

bool parse_number(const std::string& s, double* v) {
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && std::isfinite(*v);
}

Placement place(const SweepSpec& spec, const std::vector<RunGroup>& groups) {
  Placement p;
  std::map<std::string, const SweepRun*> run_of;  // setting -> its first run
  for (const SweepRun& r : spec.runs) run_of.emplace(r.setting, &r);
  std::vector<Point*> valued;
  for (const RunGroup& g : groups) {
    const auto it = run_of.find(g.name);
    if (it == run_of.end()) continue;
    const SweepRun& run = *it->second;
    const GroupFigures f = group_figures(g, 0);
    Point pt{g.name, "", 0, f.loss, f.bytes_per_worker.mean, f.seeds};
    if (const auto v = run.grid.find(spec.against); v != run.grid.end()) {
      pt.value = v->second;
      auto line = std::find_if(p.lines.begin(), p.lines.end(), [&](const auto& l) { return l.first == run.family; });
      if (line == p.lines.end()) line = p.lines.emplace(p.lines.end(), run.family, std::vector<Point>{});
      line->second.push_back(pt);
    } else if (std::string own = own_value(run, spec.against); !own.empty()) {
      pt.value = own;
      p.lone.push_back(pt);
    } else {
      p.references.push_back(pt);
    }
  }
  for (auto& line : p.lines)
    for (Point& pt : line.second) valued.push_back(&pt);
  for (Point& pt : p.lone) valued.push_back(&pt);
  for (Point* pt : valued) p.numeric = p.numeric && parse_number(pt->value, &pt->x);
  if (p.numeric) {
    double lo = INFINITY, hi = -INFINITY;
    for (const Point* pt : valued) lo = std::min(lo, pt->x), hi = std::max(hi, pt->x);
    p.log_x = !valued.empty() && lo > 0 && hi / lo >= 20;  // a trend over decades (H from 10 to 10,000)
  } else {
    for (Point* pt : valued) {
      auto at = std::find(p.categories.begin(), p.categories.end(), pt->value);
      if (at == p.categories.end()) at = p.categories.insert(p.categories.end(), pt->value);
      pt->x = double(at - p.categories.begin());
    }
  }
  for (auto& line : p.lines)
    std::stable_sort(line.second.begin(), line.second.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
  return p;
}

std::string cell(const Point& pt) {
  return format_mean_interval(pt.loss, 4) + " (" + format_megabytes(pt.bytes) + " MB)";
}

// "10000" -> "10,000"; other numbers as %g.
std::string tick_number(double v) {
  if (std::fabs(v) >= 1e15 || v != std::floor(v)) return format_number("%g", v);
  std::string digits = format_number("%.0f", std::fabs(v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

std::string table(const SweepSpec& spec, const Placement& p, const std::string& file) {
  // Rows: the values in order of x; each row's label as first written.
  std::vector<std::pair<double, std::string>> rows;
  auto add_row = [&](const Point& pt) {
    if (std::none_of(rows.begin(), rows.end(), [&](const auto& r) { return r.first == pt.x; }))
      rows.push_back({pt.x, pt.value});
  };
  for (const auto& line : p.lines)
    for (const Point& pt : line.second) add_row(pt);
  for (const Point& pt : p.lone) add_row(pt);
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::ostringstream o;
  o << "**Final eval loss against `" << spec.against
    << "`** (mean ± 95% interval over seeds, with the MB sent per worker; a column per runs entry the grid "
       "expands"
    << (p.lone.empty() ? "" : ", and the settings that set the key on their own line") << "):\n\n";
  std::string header = "| `" + spec.against + "` |";
  for (const auto& line : p.lines) header += " " + line.first + " |";
  if (!p.lone.empty()) header += " on their own line |";
  o << header << "\n" << markdown_delimiter(header) << "\n";
  for (const auto& row : rows) {
    const double x = row.first;
    o << "| " << row.second << " |";
    for (const auto& line : p.lines) {
      const auto at = std::find_if(line.second.begin(), line.second.end(), [&](const Point& pt) { return pt.x == x; });
      o << " " << (at == line.second.end() ? "—" : cell(*at)) << " |";
    }
    if (!p.lone.empty()) {
      std::string lone;
      for (const Point& pt : p.lone)
        if (pt.x == x) lone += (lone.empty() ? "" : "; ") + pt.setting + " " + cell(pt);
      o << " " << (lone.empty() ? "—" : lone) << " |";
    }
    o << "\n";
  }
  o << "\n";
  if (!p.references.empty()) {
    o << "Without `" << spec.against << "` (the chart's horizontal bands):";
    for (size_t i = 0; i < p.references.size(); ++i)
      o << (i ? ";" : "") << " " << p.references[i].setting << " " << cell(p.references[i]);
    o << ".\n\n";
  }
  o << "![Final eval loss against " << spec.against << "](img/" << file << ")\n\n";
  return o.str();
}

// The chart's frame: plot area inside the margins, legend on the right.
constexpr double kWidth = 760, kHeight = 400, kLeft = 64, kRight = 230, kTop = 16, kBottom = 48;
constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;
const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                                "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39"};

std::string f1(double v) { return format_number("%.1f", v); }

// A tick step of 1, 2 or 5 times a power of ten giving about five ticks.
double nice_step(double span) {
  const double raw = span / 5, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw) return m * magnitude;
  return 10 * magnitude;
}

std::string chart(const SweepSpec& spec, const Placement& p) {
  const auto tx = [&](double x) { return p.log_x ? std::log10(x) : x; };
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  int seeds = 0;
  auto extend_y = [&](const Point& pt) {
    if (!std::isfinite(pt.loss.mean)) return;  // a diverged setting: in the table, not on the chart
    const bool band = pt.loss.has_interval();
    y0 = std::min(y0, band ? pt.loss.low() : pt.loss.mean);
    y1 = std::max(y1, band ? pt.loss.high() : pt.loss.mean);
    seeds = std::max(seeds, pt.seeds);
  };
  auto extend = [&](const Point& pt) {
    if (!std::isfinite(pt.loss.mean)) return;
    x0 = std::min(x0, tx(pt.x)), x1 = std::max(x1, tx(pt.x));
    extend_y(pt);
  };
  for (const auto& line : p.lines)
    for (const Point& pt : line.second) extend(pt);
  for (const Point& pt : p.lone) extend(pt);
  for (const Point& pt : p.references) extend_y(pt);
  if (!(x1 >= x0)) x0 = 0, x1 = 1;
  if (!(y1 >= y0)) y0 = 0, y1 = 1;
  const double xpad = x1 > x0 ? 0.06 * (x1 - x0) : 0.5, ypad = y1 > y0 ? 0.06 * (y1 - y0) : 0.01 * std::fabs(y0) + 1e-3;
  x0 -= xpad, x1 += xpad, y0 -= ypad, y1 += ypad;
  // Lone points sit side by side right of their value (R12's four rescues
  // all have H = 10,000): room for them on the right.
  constexpr double kDodge = 9;
  size_t most_lone = 0;
  for (const Point& a : p.lone)
    most_lone = std::max<size_t>(
        most_lone, size_t(std::count_if(p.lone.begin(), p.lone.end(), [&](const Point& b) { return b.x == a.x; })));
  if (most_lone > 0) x1 += (x1 - x0) * (kDodge * double(most_lone) + 6) / (kPlotW - kDodge * double(most_lone) - 6);
  const auto px = [&](double x) { return kLeft + (tx(x) - x0) / (x1 - x0) * kPlotW; };
  const auto py = [&](double y) { return kTop + (y1 - y) / (y1 - y0) * kPlotH; };
  const std::string leaf = spec.against.substr(spec.against.rfind('.') + 1);

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
    << "\" viewBox=\"0 0 " << kWidth << " " << kHeight << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // Grid and ticks.
  const double ystep = nice_step(y1 - y0);
  const int ydigits = std::max(0, -int(std::floor(std::log10(ystep))));
  for (double y = std::ceil(y0 / ystep) * ystep; y <= y1; y += ystep) {
    o << "<line x1=\"" << f1(kLeft) << "\" x2=\"" << f1(kLeft + kPlotW) << "\" y1=\"" << f1(py(y)) << "\" y2=\""
      << f1(py(y)) << "\" stroke=\"#e5e5e5\"/>";
    o << "<text x=\"" << f1(kLeft - 6) << "\" y=\"" << f1(py(y) + 4) << "\" text-anchor=\"end\">"
      << format_number(("%." + std::to_string(ydigits) + "f").c_str(), y) << "</text>\n";
  }
  std::vector<std::pair<double, std::string>> xticks;
  if (!p.numeric) {
    for (size_t i = 0; i < p.categories.size(); ++i) xticks.push_back({double(i), p.categories[i]});
  } else if (p.log_x) {
    for (double d = std::ceil(x0); d <= x1; ++d) xticks.push_back({std::pow(10.0, d), tick_number(std::pow(10.0, d))});
  } else {
    for (const auto& line : p.lines)
      for (const Point& pt : line.second) xticks.push_back({pt.x, tick_number(pt.x)});
    for (const Point& pt : p.lone) xticks.push_back({pt.x, tick_number(pt.x)});
    std::sort(xticks.begin(), xticks.end());
    xticks.erase(std::unique(xticks.begin(), xticks.end()), xticks.end());
  }
  for (const auto& [x, label] : xticks) {
    o << "<line x1=\"" << f1(px(x)) << "\" x2=\"" << f1(px(x)) << "\" y1=\"" << f1(kTop) << "\" y2=\""
      << f1(kTop + kPlotH) << "\" stroke=\"#e5e5e5\"/>";
    o << "<text x=\"" << f1(px(x)) << "\" y=\"" << f1(kTop + kPlotH + 16) << "\" text-anchor=\"middle\">"
      << escape_html(label) << "</text>\n";
  }
  o << "<rect x=\"" << f1(kLeft) << "\" y=\"" << f1(kTop) << "\" width=\"" << f1(kPlotW) << "\" height=\"" << f1(kPlotH)
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  o << "<text x=\"" << f1(kLeft + kPlotW / 2) << "\" y=\"" << f1(kHeight - 10) << "\" text-anchor=\"middle\">"
    << escape_html(spec.against) << (p.log_x ? " (log scale)" : "") << "</text>\n";
  const double ymid = kTop + kPlotH / 2;
  o << "<text x=\"14\" y=\"" << f1(ymid) << "\" text-anchor=\"middle\" transform=\"rotate(-90 14 " << f1(ymid)
    << ")\">final eval loss" << (seeds > 1 ? " (mean of " + std::to_string(seeds) + " seeds, 95% interval)" : "")
    << "</text>\n";

  size_t color = 0;
  double legend_y = kTop + 10;
  auto legend = [&](const std::string& label, const std::string& swatch) {
    o << swatch << "<text x=\"" << f1(kLeft + kPlotW + 40) << "\" y=\"" << f1(legend_y + 4) << "\">"
      << escape_html(label) << "</text>\n";
    legend_y += 18;
  };
  const double lx = kLeft + kPlotW + 14;
  auto interval = [&](const Point& pt, const char* c, double dx) {
    if (!pt.loss.has_interval()) return;
    const double x = px(pt.x) + dx;
    o << "<path class=\"interval\" data-setting=\"" << escape_html(pt.setting) << "\" d=\"M" << f1(x - 4) << " "
      << f1(py(pt.loss.high())) << "H" << f1(x + 4) << "M" << f1(x) << " " << f1(py(pt.loss.high())) << "V"
      << f1(py(pt.loss.low())) << "M" << f1(x - 4) << " " << f1(py(pt.loss.low())) << "H" << f1(x + 4) << "\" stroke=\""
      << c << "\" fill=\"none\"/>\n";
  };
  // References first, beneath: a band for the interval, a dashed line at the mean.
  for (const Point& pt : p.references) {
    const char* c = kPalette[color++ % std::size(kPalette)];
    if (!std::isfinite(pt.loss.mean)) continue;
    if (pt.loss.has_interval())
      o << "<rect class=\"reference-band\" x=\"" << f1(kLeft) << "\" y=\"" << f1(py(pt.loss.high())) << "\" width=\""
        << f1(kPlotW) << "\" height=\"" << f1(py(pt.loss.low()) - py(pt.loss.high())) << "\" fill=\"" << c
        << "\" fill-opacity=\"0.12\"/>\n";
    o << "<line class=\"reference\" data-setting=\"" << escape_html(pt.setting) << "\" data-mean=\""
      << format_number("%.6g", pt.loss.mean) << "\" x1=\"" << f1(kLeft) << "\" x2=\"" << f1(kLeft + kPlotW)
      << "\" y1=\"" << f1(py(pt.loss.mean)) << "\" y2=\"" << f1(py(pt.loss.mean)) << "\" stroke=\"" << c
      << "\" stroke-dasharray=\"6 4\"/>\n";
    legend(pt.setting + " (no " + leaf + ")", "<line x1=\"" + f1(lx) + "\" x2=\"" + f1(lx + 20) + "\" y1=\"" +
                                                  f1(legend_y) + "\" y2=\"" + f1(legend_y) + "\" stroke=\"" + c +
                                                  "\" stroke-dasharray=\"6 4\"/>");
  }
  for (const auto& [family, points] : p.lines) {
    const char* c = kPalette[color++ % std::size(kPalette)];
    o << "<polyline class=\"line\" data-family=\"" << escape_html(family) << "\" points=\"";
    const char* gap = "";
    for (const Point& pt : points) {
      if (!std::isfinite(pt.loss.mean)) continue;
      o << gap << f1(px(pt.x)) << "," << f1(py(pt.loss.mean));
      gap = " ";
    }
    o << "\" fill=\"none\" stroke=\"" << c << "\" stroke-width=\"1.5\"/>\n";
    for (const Point& pt : points) {
      if (!std::isfinite(pt.loss.mean)) continue;
      interval(pt, c, 0);
      o << "<circle class=\"point\" data-setting=\"" << escape_html(pt.setting) << "\" data-mean=\""
        << format_number("%.6g", pt.loss.mean) << "\" cx=\"" << f1(px(pt.x)) << "\" cy=\"" << f1(py(pt.loss.mean))
        << "\" r=\"3.5\" fill=\"" << c << "\"/>\n";
    }
    legend(family, "<line x1=\"" + f1(lx) + "\" x2=\"" + f1(lx + 20) + "\" y1=\"" + f1(legend_y) + "\" y2=\"" +
                       f1(legend_y) + "\" stroke=\"" + c + "\" stroke-width=\"1.5\"/><circle cx=\"" + f1(lx + 10) +
                       "\" cy=\"" + f1(legend_y) + "\" r=\"3.5\" fill=\"" + c + "\"/>");
  }
  std::map<double, int> lone_at;  // lone points drawn so far at each x
  for (const Point& pt : p.lone) {
    const char* c = kPalette[color++ % std::size(kPalette)];
    if (!std::isfinite(pt.loss.mean)) continue;
    const double dodge = kDodge * ++lone_at[pt.x];
    auto diamond = [&](double x, double y) {
      return "M" + f1(x) + " " + f1(y - 5) + "L" + f1(x + 5) + " " + f1(y) + "L" + f1(x) + " " + f1(y + 5) + "L" +
             f1(x - 5) + " " + f1(y) + "Z";
    };
    interval(pt, c, dodge);
    o << "<path class=\"lone\" data-setting=\"" << escape_html(pt.setting) << "\" data-mean=\""
      << format_number("%.6g", pt.loss.mean) << "\" d=\"" << diamond(px(pt.x) + dodge, py(pt.loss.mean)) << "\" fill=\""
      << c << "\"/>\n";
    legend(pt.setting, "<path d=\"" + diamond(lx + 10, legend_y) + "\" fill=\"" + c + "\"/>");
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace

LossAgainstFigure loss_against(const SweepSpec& spec, const std::vector<RunGroup>& groups) {
  LossAgainstFigure fig;
  if (spec.against.empty()) return fig;
  const Placement p = place(spec, groups);
  if (p.lines.empty() && p.lone.empty()) return fig;
  fig.file = spec.name + "_loss_against_" + spec.against.substr(spec.against.rfind('.') + 1) + ".svg";
  fig.markdown = table(spec, p, fig.file);
  fig.svg = chart(spec, p);
  return fig;
}

}  // namespace atl
