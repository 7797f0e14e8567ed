// The HTML report's "What-if network" panel (ReportOptions::network_sliders).
//
// A bandwidth and a latency slider over a grid of networks. Moving them
// shows every run as atoll retime gives it on that network: the wall-clock
// chart's times and the table's simulated time, time to loss and compute
// utilisation, recomputed in the page. A crossover chart draws each
// setting's time to loss against bandwidth at the chosen latency.
//
// The retiming is done here, once per run and grid point (network_grid);
// the page only picks a grid point and averages over seeds, with the same
// rules as the C++ tables (time_to_loss, group_figures). The grid is
// embedded as JSON (#atoll-network).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "atoll/report.h"
#include "atoll/whatif.h"
#include "report/groups.h"

namespace atl {

// The grid for these runs (default_grid_bandwidths x default_grid_latencies),
// or an empty grid when any run has no timing traces (older run folders).
NetworkGrid report_network_grid(const std::vector<RunData>& runs);

// Where the sliders start: the grid point nearest the run's own
// network.bandwidth (in log bandwidth, as the slider is spaced) and
// network.latency; the middle of an axis when the run does not say.
struct GridPoint {
  size_t bandwidth = 0, latency = 0;
};
GridPoint nearest_grid_point(const NetworkGrid& grid, const RunData& run);

// "1 Gbit/s" / "10 ms": the sliders' readouts.
std::string format_latency(double seconds);

class NetworkSliders {
 public:
  // Nothing on the page (as without the option).
  NetworkSliders() = default;
  // `grid.runs` match `runs` one to one (same folders, same order); an empty
  // grid gives no panel. `groups` are the table's rows (group_by_seed(runs)),
  // `base` the reference whose network places the sliders at the start.
  NetworkSliders(NetworkGrid grid, const std::vector<RunData>& runs, const std::vector<RunGroup>& groups,
                 const RunGroup& base, double target_loss);
  // The grid could not be built (a broken trace): the panel says why, in
  // place of the sliders, and the rest of the report stands.
  static NetworkSliders unavailable(const std::string& why);

  bool active() const { return !data_.empty(); }
  // The panel above the table: sliders with their readouts, the status line
  // (the page reveals it when its script runs, so without scripts the page
  // is the plain report).
  std::string panel_html() const;
  // The crossover chart's box, for the charts grid.
  std::string chart_html() const;
  // The grid as JSON and the script; after Chart.js and the charts' script.
  std::string script_html() const;
  // Attributes marking a table cell the sliders rewrite: data-whatif="<kind>"
  // (total, ttt, util), data-setting="<row>", data-value="<figure>" (seconds,
  // -1 for never; a fraction for utilisation). "" when inactive.
  std::string cell(const char* kind, size_t setting, double value) const;

 private:
  std::string data_;  // the JSON, "" when inactive
  std::string error_;
  GridPoint start_;
  std::vector<std::string> bandwidth_labels_, latency_labels_;
  std::string recorded_;  // the recorded network, in words
};

}  // namespace atl
