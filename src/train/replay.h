// Replays a finished run's timing traces on another network: every worker's
// recorded compute charges and communication calls, in order, through the
// same Communicator and InProcessGroup code a run uses, with clocks and
// links built from the new config. Only sizes travel (the data are tiny
// stand-ins), so a replay costs a fraction of the run and gives exactly the
// clock and ledger a fresh run on that network would have had.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "comm/timing_trace.h"

namespace atl {

// One worker's clock and ledger totals at one point of the run.
struct ReplayReading {
  double now = 0, compute = 0, blocked = 0;
  double sent = 0, received = 0;              // wide-area (or flat) ledger
  double intra_sent = 0, intra_received = 0;  // islands: the island's ledger
  double network_s = 0, intra_network_s = 0;  // the network model's time so far
  int64_t ops = 0;
};

struct ReplayedWorker {
  std::vector<ReplayReading> at_step;  // [s]: after s steps, s = 0..steps
  std::map<std::string, double> sent_by_tag, received_by_tag;
  double peak_sent = 0;  // Ledger::peak_sent over cfg.run.peak_window_steps
};

// What a projection changes in the recorded run (1, 1: the run as it was).
struct ReplayScale {
  double bytes = 1;    // every payload
  double compute = 1;  // every compute charge
};

// Replays `traces` (one per worker, rank order) on the network of `cfg`
// ([network], [islands]; cfg.strategy.workers = traces.size()). Throws
// TraceError when the traces do not fit together or the layout.
std::vector<ReplayedWorker> replay_traces(const Config& cfg, const std::vector<TimingTrace>& traces,
                                          const ReplayScale& scale = {});

}  // namespace atl
