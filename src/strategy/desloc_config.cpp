// DES-LOC's config rules, apart from the strategy's code so that validate()
// and the fuzz build (fuzz/CMakeLists.txt) link them without it.
#include "config/checks.h"
#include "strategy/desloc.h"

namespace atl {

void validate_desloc(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.desloc.param_period >= 1 && c.desloc.param_period <= 1000000000,
         "desloc.param_period (K_x) must be in [1, 1e9]");
  p.need(c.desloc.first_moment_factor >= 0 && c.desloc.first_moment_factor <= 1000,
         "desloc.first_moment_factor (K_u / K_x) must be in [0, 1000] (0 = never)");
  p.need(c.desloc.second_moment_factor >= 0 && c.desloc.second_moment_factor <= 1000,
         "desloc.second_moment_factor (K_v / K_x) must be in [0, 1000] (0 = never)");
  // The moments it averages are Adam's (or Muon's momentum): plain SGD keeps none.
  p.need(c.strategy.name != "desloc" || c.optim.name != "sgd",
         "strategy.name = desloc averages the inner optimizer's moments: optim.name must be adamw or muon, not sgd");
}

}  // namespace atl
