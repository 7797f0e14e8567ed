// NoLoCo's config rules, apart from the strategy's code so
// that validate() and the fuzz build (fuzz/CMakeLists.txt) link them without it.
#include "config/checks.h"
#include "strategy/noloco.h"

namespace atl {

void validate_noloco(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.noloco.inner_steps >= 1, "noloco.inner_steps (H) must be >= 1");
  p.need(c.noloco.outer_lr > 0, "noloco.outer_lr (a) must be > 0");
  p.need(c.noloco.outer_momentum >= 0 && c.noloco.outer_momentum < 1, "noloco.outer_momentum must be in [0, 1)");
  p.need(c.noloco.group_size >= 2, "noloco.group_size (G) must be >= 2");
}

}  // namespace atl
