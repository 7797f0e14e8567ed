// DiLoCo's config rules ([diloco], also read by localsgd, sparta_diloco and
// streaming), apart from the strategy's code so that validate() and the fuzz
// build (fuzz/CMakeLists.txt) link them without it.
#include "config/checks.h"
#include "strategy/diloco.h"

namespace atl {

void validate_diloco(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.diloco.ddp_warmup_steps >= 0, "diloco.ddp_warmup_steps must be >= 0");
  p.enum_check("diloco.warmup_sync", c.diloco.warmup_sync, {"gradients", "none"});
  p.need(c.diloco.inner_steps >= 1, "diloco.inner_steps (H) must be >= 1");
  p.need(c.diloco.outer_lr > 0, "diloco.outer_lr must be > 0");
  p.need(one_of(c.diloco.outer_optimizer, {"sgd", "adam"}),
         "diloco.outer_optimizer must be one of sgd, adam (got '" + c.diloco.outer_optimizer + "')");
  p.need(c.diloco.outer_beta2 >= 0 && c.diloco.outer_beta2 < 1, "diloco.outer_beta2 must be in [0, 1)");
  p.need(c.diloco.outer_eps > 0, "diloco.outer_eps must be > 0");
  p.need(c.diloco.outer_momentum >= 0 && c.diloco.outer_momentum < 1, "diloco.outer_momentum must be in [0, 1)");
  const int64_t k = c.diloco.outer_steps_per_sync;
  p.need(k >= 1 && k <= 1000, "diloco.outer_steps_per_sync (K) must be in 1..1000 (got " + std::to_string(k) +
                                  "; 1 = one outer step per sync)");
  // The extra steps are the authors' momentum-only SGD steps; Adam on a zero
  // pseudo-gradient would still move theta_g by its bias-corrected moments, a
  // step no reference takes.
  p.need(k <= 1 || c.diloco.outer_optimizer == "sgd",
         "diloco.outer_steps_per_sync > 1 needs diloco.outer_optimizer = sgd (the extra outer steps apply momentum "
         "on a zero pseudo-gradient; Adam has no such step in any reference)");
  // Robust aggregation (OuterSync::combine).
  p.enum_check("diloco.aggregator", c.diloco.aggregator, {"mean", "median", "trimmed_mean"});
  p.need(c.diloco.trim_fraction >= 0 && c.diloco.trim_fraction < 0.5, "diloco.trim_fraction must be in [0, 0.5)");
  p.need(c.diloco.clip_norm >= 0, "diloco.clip_norm must be >= 0 (0 = off)");
}

}  // namespace atl
