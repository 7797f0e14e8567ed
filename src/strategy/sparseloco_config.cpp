// SparseLoCo's config rules and its outer settings, apart from the
// strategy's code so that validate() and the fuzz build
// (fuzz/CMakeLists.txt) link them without it.
#include "config/checks.h"
#include "strategy/sparseloco.h"

namespace atl {

void validate_sparseloco(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.sparseloco.outer_lr > 0, "sparseloco.outer_lr (lr_out) must be > 0");
  p.need(c.sparseloco.error_decay >= 0 && c.sparseloco.error_decay <= 1,
         "sparseloco.error_decay (beta) must be in [0, 1]");
  p.enum_check("sparseloco.codec", c.sparseloco.codec, {"topk-chunk-2bit", "topk-chunk"});
}

DiLoCoConfig sparseloco_outer(const Config& cfg) {
  DiLoCoConfig outer = cfg.diloco;
  outer.outer_lr = cfg.sparseloco.outer_lr;
  outer.outer_momentum = 0;  // the error-feedback accumulator replaces it
  outer.nesterov = false;
  outer.outer_optimizer = "sgd";
  outer.outer_steps_per_sync = 1;
  outer.charge_extra_syncs = false;
  outer.codec = cfg.sparseloco.codec;
  return outer;
}

}  // namespace atl
