// DeMo: Decoupled Momentum Optimization (Peng, Quesnelle, Kingma 2024,
// arXiv 2411.19870); ALGORITHMS.md 6. No gradient all-reduce: every worker
// keeps a private momentum and shares only its fast (top-k DCT) components.
//
//   g <- clip(own gradient, optim.grad_clip)           // global norm of this worker's gradients
//   for each tensor W (momentum m, zeros at the start):
//     W <- W (1 - lr wd)                                // decoupled weight decay
//     m <- beta m + lr g                                // lr is folded into the momentum
//     (idx, val) <- top-k by |C| per block, C = DCT_blocks(m)   // compress/dct.h
//     m <- m - IDCT_blocks(scatter(idx, val))           // error feedback: remove what is sent
//   all-gather every worker's (idx, val) of all tensors  // ONE collective per step, tag "demo"
//   for each tensor:
//     C_hat <- scatter_mean(workers' (idx, val))        // rank order: bitwise equal on every rank
//     W <- W - lr sign(IDCT_blocks(C_hat))              // demo.sign = false: W - lr IDCT_blocks(C_hat)
//
// Wire format, the same layout on every rank: one uint8 buffer holding, per
// tensor in parameter order, its blocks*k values as float32 and then its
// blocks*k indices as int16 or int64 (demo.index_dtype). So per step a worker
// sends (N - 1) s and receives (N - 1) s bytes (ALGORITHMS.md 7.2), where
//   s = sum over tensors of blocks * min(k, block_size) * (4 + index bytes).
//
// Config: demo.beta (0.999), demo.topk k (32), demo.chunk c (64),
// demo.index_dtype (int16 | int64), demo.sign (true), demo.weight_decay (0);
// optim.grad_clip (OLMo configs: 1.0). lr is step()'s inner learning rate.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "atoll/strategy.h"
#include "compress/dct.h"

namespace atl {

// The [demo] section's rules (demo_config.cpp).
void validate_demo(const Config& cfg, std::vector<std::string>& errors);

class DemoStrategy : public Strategy {
 public:
  DemoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm);
  void step(int64_t t, double lr) override;
  void visit_state(StateVisitor& v) override;
  // demo_payload_bytes (s above), demo_coefficients (sent per step) and
  // demo_bytes_per_param (s / P).
  std::map<std::string, double> stats() const override;
  double take_extra_flops() override;
  // Per tensor, the part of the momentum not sent yet (shaped like the parameters).
  const std::vector<at::Tensor>& momentum() const { return momentum_; }

 private:
  // A tensor's block layout and where its values and indices sit in the buffer.
  struct Plan {
    BlockDct dct;
    int64_t k = 0;             // coefficients sent per block: min(demo.topk, block size)
    int64_t value_offset = 0;  // byte offsets in the wire buffer
    int64_t index_offset = 0;
  };

  DemoConfig cfg_;
  double grad_clip_;
  std::vector<at::Tensor> params_;
  Communicator& comm_;
  at::ScalarType index_dtype_;  // on the wire: kShort or kLong
  std::vector<Plan> plans_;
  std::vector<at::Tensor> momentum_;
  at::Tensor send_;         // (s) uint8, reused every step
  double extra_flops_ = 0;  // this step's transforms and element-wise work (take_extra_flops)
  int64_t payload_bytes_ = 0, coefficients_ = 0, total_params_ = 0;
  int64_t index_bytes_ = 0;  // of payload_bytes_, the positions (the ledger's split by part)
};

}  // namespace atl
