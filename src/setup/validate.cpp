// validate(): the one place where every area's checks meet. Config checks
// the sections it owns (config/sections.cpp) but knows no method, codec or
// network; each method's rules are reached through the strategy table
// (strategy/table.cpp), which also checks the codec keys and [codec], and
// the net area checks [network] and [islands]. This area sits above them
// all, so config stays below them.
#include "config/validate.h"
#include "atoll/setup.h"
#include "net/validate_network.h"
#include "strategy/table.h"

namespace atl {

std::vector<std::string> validate(const Config& c) {
  std::vector<std::string> errors;
  validate_training(c, errors);
  validate_strategy(c, errors);
  validate_network(c, errors);
  validate_islands(c, errors);
  validate_faults(c, method_warmup_steps(c), errors);
  return errors;
}

}  // namespace atl
