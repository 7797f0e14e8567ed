// What-if networks (atoll whatif, the report's network sliders): finished
// runs retimed over a grid of bandwidths (and latencies), each setting's
// time to a target loss and total time there, and the bandwidths where a
// method overtakes the baseline (docs/RETIME.md).
//
// Times come from atoll retime, so each figure is what a fresh run on that
// network would have shown. A setting's time is the mean over its seeds
// that reached the target; a setting any of whose seeds missed it has none.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "atoll/retime.h"

namespace atl {

struct WhatifOptions {
  double bandwidth_from = 1.25e6;  // bytes/s (10 Mbit/s)
  double bandwidth_to = 12.5e9;    // bytes/s (100 Gbit/s)
  int points_per_decade = 4;       // the log grid
  double latency = -1;             // seconds; < 0: each run's own network.latency
  // Links that download faster than they upload: > 0: every link downloads
  // at this multiple of the grid's bandwidth, which is then the upload
  // (110 up / 500 down: 4.55); 0: each run's own links.
  double download_ratio = 0;
  std::string algorithm;       // a network.algorithm for every run ("": each run's own), e.g. ps (relay)
  double relay_bandwidth = 0;  // bytes/s: network.server_bandwidth for every run (0: each run's own)
  double target_loss = 0;      // 0: the report's rule (choose_target_loss): the baseline's loss at 90% of its run
  std::string baseline;        // setting the crossovers are against; "": the DDP setting, else the first
  double crossover_tolerance = 1e-4;  // relative, in bandwidth (bisection between grid points)
  Projection projection;              // active(): every run projected to a bigger model
};

struct WhatifSetting {
  std::string name;                    // the runs' common name without "_s<k>"
  std::vector<std::string> runs;       // run folders, one per seed
  std::vector<double> time_to_target;  // per grid bandwidth: mean simulated s over seeds, a seed that misses
                                       // the target censored at its run's end (a lower bound when reached < seeds)
  int reached = 0, seeds = 0;          // seeds that reach the target (the same at every bandwidth), of all
  std::vector<double> total_time;      // per grid bandwidth: simulated s of the whole run (mean over seeds)
};

// Where `setting` and the baseline take equally long to the target: below
// `bandwidth` one is faster, above it the other.
struct Crossover {
  std::string setting, baseline;
  double bandwidth = 0;      // bytes/s
  bool faster_below = true;  // `setting` reaches the target first below `bandwidth`
};

struct WhatifResult {
  double target_loss = 0;
  std::string target_why;    // which rule chose target_loss, for the page
  std::string network_note;  // the links and algorithm every run was retimed to, for the page ("" = their own)
  std::string baseline;
  std::vector<double> bandwidths;  // bytes/s, ascending
  std::vector<WhatifSetting> settings;
  std::vector<Crossover> crossovers;
  bool projected = false;
  std::string projection_note;  // what a projection assumes ("" when none)
};

WhatifResult run_whatif(const std::vector<std::string>& run_dirs, const WhatifOptions& options);
// The Markdown page: the assumption (projection), the table (rows: grid
// bandwidths; columns: each setting's time to target, the fastest in bold)
// and the crossovers in words ("diloco reaches 2.1 before ddp below 2.3 Gbit/s").
std::string whatif_markdown(const WhatifResult& r);
// "2.3 Gbit/s", "100 Mbit/s": a bandwidth in bytes/s as people quote links.
std::string format_bit_rate(double bytes_per_second);

// The report's sliders: each run's evaluations' simulated times at every
// (bandwidth, latency) of a grid, from atoll retime.
struct NetworkGrid {
  std::vector<double> bandwidths;  // bytes/s, ascending
  std::vector<double> latencies;   // seconds, ascending
  // runs[i].eval_time[b * latencies.size() + l]: run i's evaluation times at
  // bandwidths[b], latencies[l] (the same evaluations as RunData::eval_time);
  // sim_seconds likewise: the run's total simulated time there; utilisation:
  // its compute utilisation there (summary.json's compute_utilisation).
  struct Run {
    std::string dir;
    std::vector<std::vector<double>> eval_time;
    std::vector<double> sim_seconds;
    std::vector<double> utilisation;
  };
  std::vector<Run> runs;
};
// Whether every run folder has timing traces (run folders from before
// retime existed have none).
bool has_timing_traces(const std::vector<std::string>& run_dirs);
// Empty (no runs) when any run lacks timing traces.
NetworkGrid network_grid(const std::vector<std::string>& run_dirs, const std::vector<double>& bandwidths,
                         const std::vector<double>& latencies);
// The default grids: 1 Mbit/s .. 100 Gbit/s, two points per decade; 0, 1, 10, 30, 100 ms.
std::vector<double> default_grid_bandwidths();
std::vector<double> default_grid_latencies();

}  // namespace atl
