// [network]'s checks: the net area validates its own section (validate()
// in src/config/validate.cpp composes every area's checks).
#include <algorithm>
#include <string>
#include <vector>

#include "atoll/net.h"
#include "config/checks.h"
#include "config/validate.h"
#include "net/devices.h"

namespace atl {

void validate_network(const Config& c, std::vector<std::string>& e) {
  Problems p(e);
  p.enum_check("network.algorithm", c.network.algorithm, {"ring", "tree", "ps", "parameter-server"});
  p.enum_check("network.compute_time", c.network.compute_time, {"flops", "measured"});
  p.need(c.network.device_flops >= 0, "network.device_flops must be >= 0 (0 = network.device's rate)");
  p.need(c.network.device_flops > 0 || find_compute_device(c.network.device) != nullptr,
         "network.device = '" + c.network.device + "' is not a known device; allowed: " + compute_device_names() +
             " (or set network.device_flops)");
  // Units, per-worker lists and their lengths, checked by the code that uses them.
  try {
    // Clamped to the allowed range, so an absurd strategy.workers (reported
    // above) does not allocate a link per worker here (fuzz finding).
    NetworkModel::from_config(c.network, std::clamp<int64_t>(c.strategy.workers, 1, 256), 0);
  } catch (const std::exception& ex) {
    e.push_back(ex.what());
  }
  try {
    const auto speed = parse_number_list(c.network.speed_factors, 1.0);
    p.need(int64_t(speed.size()) <= c.strategy.workers,
         "network.speed_factors lists " + std::to_string(speed.size()) + " workers but strategy.workers = " +
             std::to_string(c.strategy.workers));
    for (double f : speed) p.need(f > 0, "network.speed_factors must all be > 0");
  } catch (const std::exception& ex) {
    e.push_back(std::string("network.speed_factors: ") + ex.what());
  }
  p.need(c.network.mfu > 0 && c.network.mfu <= 1, "network.mfu must be in (0, 1]");
}

}  // namespace atl
