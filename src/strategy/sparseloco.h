// SparseLoCo (Sarfi et al. 2025, arXiv 2508.15706; the optimizer of the
// Covenant-72B run); ALGORITHMS.md 8.7. DiLoCo whose outer gradient is
// compressed hard, with error feedback in place of the outer momentum:
//
//   each worker: H inner steps (AdamW, [optim]) on theta_i
//   Delta_i <- theta_g - theta_i
//   e_i     <- beta * e_i + Delta_i                 // sparseloco.error_decay
//   c_i     <- Q_2bit(TopK_chunk(e_i, k))           // codec topk-chunk-2bit (compress/chunk_topk.h)
//   e_i     <- e_i - c_i
//   theta_g <- theta_g - lr_out * mean_i(c_i)       // all-gather of the messages; no momentum
//   theta_i <- theta_g
//
// It is DiLoCo with that outer step: OuterSync with momentum 0 and the
// codec's error feedback decayed by beta, so faults, checkpoints, the warm-up
// and the clock are DiLoCo's. [sparseloco] holds lr_out, beta and the codec;
// H, the warm-up and aggregation come from [diloco]; C and k from [codec].
#pragma once

#include "strategy/diloco.h"

namespace atl {

// The [sparseloco] section's rules (sparseloco_config.cpp).
void validate_sparseloco(const Config& cfg, std::vector<std::string>& errors);

// The outer step SparseLoCo takes, as DiLoCo's settings: cfg.diloco with
// lr_out and the codec from [sparseloco], no momentum, one outer step per sync.
DiLoCoConfig sparseloco_outer(const Config& cfg);

class SparseLoCoStrategy : public DiLoCoStrategy {
 public:
  SparseLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                     const std::vector<std::string>& names = {})
      : DiLoCoStrategy(cfg, sparseloco_outer(cfg), cfg.sparseloco.error_decay, std::move(params), comm, names) {}
};

}  // namespace atl
