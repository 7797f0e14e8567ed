// The baselines' config rules, apart from the strategy's code so that
// validate() and the fuzz build (fuzz/CMakeLists.txt) link them without it.
#include "config/checks.h"
#include "strategy/baselines.h"

namespace atl {

void validate_single(const Config& c, std::vector<std::string>& errors) {
  Problems(errors).need(
      c.strategy.name != "single" || c.strategy.workers == 1,
      "strategy.name = 'single' trains one worker: set strategy.workers = 1 or pick another strategy");
}

}  // namespace atl
