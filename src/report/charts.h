// The report's charts: one table, one line per chart. The page draws a box
// for each line, embeds each setting's series under each line's key, and
// hands the table to the page's script, which draws every chart from it;
// the tests iterate it. A new chart is one line here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "atoll/report.h"
#include "report/groups.h"

namespace atl {

struct ReportChart {
  const char* id;                   // the canvas's id
  const char* title;                // the heading over it
  const char* series;               // its key in each setting's series (series_json)
  std::vector<double> RunData::*x;  // x of each point, per run
  std::vector<double> RunData::*y;  // y of each point, per run
  const char* x_title;
  const char* y_title;
  bool log_x;  // log x axis (bytes)
  // Which points are drawn: "all", "positive-x" (a log axis has no 0),
  // "finite-y" (agreement is undefined before the workers move).
  const char* keep;
  // Why a setting with no drawn point is left out, in the note under the
  // chart ("" = it never is: every setting has points).
  const char* omitted;
  // The what-if network sliders retime its x axis; the crossover chart
  // follows it on the page.
  bool retimed;
};

// In page order.
const std::vector<ReportChart>& report_charts();

// The charts as the page's script reads them (#atoll-charts): id, series,
// axis titles, log, keep, omitted.
nlohmann::json charts_json();

// Per setting: name, seeds, strategy and, under each chart's `series` key,
// the mean over its seeds at the points every seed has with the 95% band
// ({x, y, low, high}; undefined points are null) (#atoll-data).
nlohmann::json series_json(const std::vector<RunGroup>& groups);

// The chart boxes, in table order; `after_retimed` goes right after the
// retimed chart (the what-if crossover chart, which it explains).
std::string chart_boxes_html(const std::string& after_retimed);

// Draws every chart of #atoll-charts from #atoll-data; sets
// body[data-charts] to the number drawn.
extern const char* const kChartScript;

}  // namespace atl
