// check_cost_flags(): the combinations of `atoll cost`'s flags that describe
// no network, refused with the flag to drop or add. The cost model's rule,
// so it is here and not in the command line.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/cost.h"
#include "atoll/net.h"

namespace atl {

void check_cost_flags(const CostQuery& q, const std::vector<std::string>& given) {
  auto was_given = [&](const char* flag) { return std::find(given.begin(), given.end(), flag) != given.end(); };
  if (q.islands == 0) {
    for (const char* flag : {"--devices", "--intra-bandwidth", "--intra-latency", "--exchange", "--shared-uplink"})
      if (was_given(flag))
        throw std::invalid_argument(std::string("cost: ") + flag + " describes islands; add --islands=I (>= 1)");
  } else if (was_given("--workers") && q.workers != q.islands * q.devices) {
    throw std::invalid_argument(
        "cost: --workers=" + std::to_string(q.workers) + " conflicts with --islands=" + std::to_string(q.islands) +
        " x --devices=" + std::to_string(q.devices) + " (the devices are the workers); drop --workers");
  }
}

}  // namespace atl
