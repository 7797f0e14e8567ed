// PALSGD's config rules, apart from the strategy's code so
// that validate() and the fuzz build (fuzz/CMakeLists.txt) link them without it.
#include "config/checks.h"
#include "strategy/palsgd.h"

namespace atl {

void validate_palsgd(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.palsgd.p >= 0 && c.palsgd.p < 1, "palsgd.p must be in [0, 1)");
  p.need(c.palsgd.eta >= 0, "palsgd.eta must be >= 0");
  p.need(c.palsgd.inner_steps >= 1, "palsgd.inner_steps (H) must be >= 1");
  p.need(c.palsgd.ddp_warmup_steps >= 0, "palsgd.ddp_warmup_steps (T_w) must be >= 0");
  p.need(c.palsgd.outer_lr > 0, "palsgd.outer_lr must be > 0");
  p.need(c.palsgd.outer_momentum >= 0 && c.palsgd.outer_momentum < 1, "palsgd.outer_momentum must be in [0, 1)");
  const int64_t k = c.palsgd.outer_steps_per_sync;
  p.need(k >= 1 && k <= 1000, "palsgd.outer_steps_per_sync (K) must be in 1..1000 (got " + std::to_string(k) +
                                  "; 1 = one outer step per sync)");
  p.enum_check("palsgd.coins", c.palsgd.coins, {"private", "shared"});
  // The pseudo-sync step moves theta_i by (lr / p) * eta of its distance to theta_bar.
  p.need(c.strategy.name != "palsgd" || c.palsgd.p == 0 || c.optim.lr / c.palsgd.p * c.palsgd.eta < 1,
         "palsgd: (optim.lr / palsgd.p) * palsgd.eta must be < 1, or the pull overshoots the global model");
}

}  // namespace atl
