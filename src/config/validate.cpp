// validate(): the one place where every area's checks meet. Config checks
// the sections it owns (config.cpp) but must not know each method's rules;
// those live with the methods and are reached through the strategy table
// (strategy/table.cpp), which also checks the codec keys and [codec]. Only
// this file links the two, so config.cpp stays free of method rules.
#include "atoll/config.h"
#include "config/validate.h"
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
