// Retiming finished runs on other networks (docs/RETIME.md).
//
// A run's trajectory does not depend on the network: every delay a method
// has is counted in steps. A finished run folder keeps what its virtual
// clocks consumed (timing/worker-<rank>.trace), and replaying that on
// another [network] gives exactly the clocks, ledgers and events a fresh run
// on that network would have had, without training again.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// Keys retime may change: the links, not the compute or the method
// (network.bandwidth, latency, jitter, algorithm, server/worker/intra/island
// links, outages, island_uplink, islands.exchange).
bool retimable_key(const std::string& key);

// What a projection charges instead of the recorded run's sizes: the same
// step-loss curve, a bigger model's payloads and compute.
struct Projection {
  double params = 0;        // > 0: payloads scale by params / the run's parameter count
  double step_seconds = 0;  // > 0: each step's compute is this (scales every compute charge)
  double device_flops = 0;  // > 0 (with mfu): compute = 6 * params * tokens per step / (flops * mfu)
  double mfu = 0;
  bool active() const { return params > 0; }
};

struct RetimedRun {
  Config config;                              // the run's config with the new network
  std::vector<std::string> events;            // metrics.jsonl lines, retimed
  std::string summary_json;                   // summary.json, retimed
  double bytes_scale = 1, compute_scale = 1;  // a projection's factors (1: none)
};

// A finished run loaded once (config, events, summary, timing traces) and
// replayed on as many networks as asked. Throws std::invalid_argument for an
// unfinished run and TraceError (a std::runtime_error) for a folder without
// (or with broken) timing traces.
class RunRetimer {
 public:
  explicit RunRetimer(const std::string& run_dir);
  ~RunRetimer();
  RunRetimer(RunRetimer&&) noexcept;
  // The run with `overrides` ("network.bandwidth=1Gbit/s", ...; leading
  // dashes are ignored). Throws std::invalid_argument for a key retime
  // cannot change, saying why.
  RetimedRun retime(const std::vector<std::string>& overrides, const Projection& projection = {}) const;
  const std::string& dir() const;

 private:
  struct Loaded;
  std::unique_ptr<Loaded> loaded_;
};

// RunRetimer(run_dir).retime(overrides, projection).
RetimedRun retime_run(const std::string& run_dir, const std::vector<std::string>& overrides,
                      const Projection& projection = {});
// A run folder at `out_dir` (config.toml, metrics.jsonl, metrics.csv,
// summary.json and the timing traces) that compare, report and results read.
// Refuses an existing non-empty folder unless `overwrite`.
void write_retimed_run(const RetimedRun& run, const std::string& run_dir, const std::string& out_dir, bool overwrite);

}  // namespace atl
