// island_layout(): islands.count and islands.devices resolved against
// strategy.workers (config.h). Plain arithmetic on the config; the net area
// checks that the two agree (validate_islands).
#include <algorithm>

#include "atoll/config.h"

namespace atl {

IslandLayout island_layout(const Config& c) {
  const int64_t n = c.strategy.workers;
  IslandLayout l;
  l.devices = c.islands.devices > 0 ? c.islands.devices : c.islands.count > 0 ? n / c.islands.count : 1;
  l.devices = std::max<int64_t>(l.devices, 1);
  l.islands = c.islands.count > 0 ? c.islands.count : n / l.devices;
  return l;
}

}  // namespace atl
