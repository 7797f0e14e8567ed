// [network]'s and [islands]' checks: the net area validates its own sections
// (validate() in src/setup/validate.cpp composes every area's checks).
#include <algorithm>
#include <string>
#include <vector>

#include "atoll/net.h"
#include "config/checks.h"
#include "net/collective_algorithms.h"
#include "net/devices.h"
#include "net/island_exchanges.h"
#include "net/validate_network.h"

namespace atl {

void validate_network(const Config& c, std::vector<std::string>& e) {
  Problems p(e);
  p.enum_check("network.algorithm", c.network.algorithm, collective_algorithm_spellings());
  p.enum_check("network.compute_time", c.network.compute_time, {"flops", "measured"});
  p.need(c.network.device_flops >= 0, "network.device_flops must be >= 0 (0 = network.device's rate)");
  p.need(c.network.device_flops > 0 || find_compute_device(c.network.device) != nullptr,
         "network.device = '" + c.network.device + "' is not a known device; allowed: " + compute_device_names() +
             " (or set network.device_flops)");
  // Units, per-worker lists and their lengths, checked by the code that uses them.
  try {
    // Clamped to the allowed range, so an absurd strategy.workers (reported
    // above) does not allocate a link per worker here (fuzz finding).
    NetworkModel::from_config(c.network, std::clamp<int64_t>(c.strategy.workers, 1, kMaxWorkers), 0);
  } catch (const std::exception& ex) {
    e.push_back(ex.what());
  }
  try {
    const auto speed = parse_number_list(c.network.speed_factors, 1.0);
    p.need(int64_t(speed.size()) <= c.strategy.workers,
           "network.speed_factors lists " + std::to_string(speed.size()) +
               " workers but strategy.workers = " + std::to_string(c.strategy.workers));
    for (double f : speed) p.need(f > 0, "network.speed_factors must all be > 0");
  } catch (const std::exception& ex) {
    e.push_back(std::string("network.speed_factors: ") + ex.what());
  }
  p.need(c.network.mfu > 0 && c.network.mfu <= 1, "network.mfu must be in (0, 1]");
}

// [islands] and the two-level network's keys. What islands cannot be
// combined with yet is refused here, with the reason, rather than run
// with a meaning nobody chose.
void validate_islands(const Config& c, std::vector<std::string>& e) {
  Problems p(e);
  const int64_t n = c.strategy.workers;
  p.need(c.islands.count >= 0, "islands.count must be >= 0 (0 = strategy.workers / islands.devices)");
  p.need(c.islands.devices >= 0, "islands.devices must be >= 0 (0 = strategy.workers / islands.count)");
  p.enum_check("islands.exchange", c.islands.exchange, island_exchange_names());
  p.enum_check("network.island_uplink", c.network.island_uplink, {"per_device", "shared"});
  // An out-of-range strategy.workers is reported by the strategy's checks;
  // building a link per island of a billion workers here would not return
  // (fuzz regression: workers = 1000000000).
  if (c.islands.count < 0 || c.islands.devices < 0 || n < 1 || n > kMaxWorkers) return;
  if (c.islands.count > 0 && n % c.islands.count != 0) {
    p.need(false, "islands.count = " + std::to_string(c.islands.count) + " does not divide strategy.workers = " +
                      std::to_string(n) + "; every island has the same number of devices");
    return;
  }
  if (c.islands.devices > 0 && n % c.islands.devices != 0) {
    p.need(false, "islands.devices = " + std::to_string(c.islands.devices) + " does not divide strategy.workers = " +
                      std::to_string(n) + "; every island has the same number of devices");
    return;
  }
  const IslandLayout l = island_layout(c);
  p.need(l.islands * l.devices == n, "islands.count x islands.devices = " + std::to_string(l.islands) + " x " +
                                         std::to_string(l.devices) + " but strategy.workers = " + std::to_string(n) +
                                         "; set strategy.workers = " + std::to_string(l.islands * l.devices) +
                                         " (or leave one of the two at 0)");
  try {
    parse_bandwidth(c.network.intra_bandwidth);
  } catch (const std::exception& ex) {
    e.push_back(std::string("network.intra_bandwidth: ") + ex.what());
  }
  try {
    parse_duration(c.network.intra_latency);
  } catch (const std::exception& ex) {
    e.push_back(std::string("network.intra_latency: ") + ex.what());
  }
  try {
    wan_network(c, 0);
  } catch (const std::exception& ex) {
    e.push_back(ex.what());
  }
  if (l.devices <= 1) return;
  // The strategy sees the islands as its workers; these keys name workers
  // (devices) or act on single devices' links, which has no meaning yet.
  auto refuse = [&](const std::string& key, const std::string& value, const std::string& instead) {
    p.need(value.empty(), key + " is not supported with islands.devices > 1" + instead);
  };
  refuse("network.worker_bandwidth", c.network.worker_bandwidth, "; set network.island_bandwidth per island");
  refuse("network.worker_latency", c.network.worker_latency, "; set network.island_latency per island");
  refuse("network.worker_download_bandwidth", c.network.worker_download_bandwidth,
         "; set network.island_download_bandwidth per island");
  refuse("network.outages", c.network.outages, " (outages are per worker link; islands have no per-device link)");
  refuse("faults.absent", c.faults.absent, " (faults act on the strategy's workers, which are then islands)");
  refuse("faults.corrupt", c.faults.corrupt, " (faults act on the strategy's workers, which are then islands)");
  p.need(c.faults.drop_prob == 0,
         "faults.drop_prob is not supported with islands.devices > 1 (faults act on the strategy's workers)");
  p.need(c.strategy.name != "single", "strategy.name = 'single' has no islands; use ddp inside one island");
}

}  // namespace atl
