// Causal self-attention that reads its heads in place from the fused q/k/v
// projection and writes each head's output straight into its columns of the
// result: no copies of heads into batch layout and back, forward or
// backward. The products are the same per-matrix BLAS products as the
// unfused path (a reshape into (B * n_head, T, head size) then at::bmm), so
// in fp32 the values and gradients are those of the unfused path.
#pragma once

#include <ATen/core/Tensor.h>

namespace atl {

// qkv: (B, T, 3C), the q, k and v projections side by side, each C wide with
// n_head heads of C / n_head. Returns y: (B, T, C), each head's
// softmax(q k^T / sqrt(hs) with the future masked) v in its own columns. The attention weights are computed and dropped
// out in fp32 (as GPU autocast does); under bf16 autocast the products take bf16 operands. Differentiable in qkv.
at::Tensor causal_attention(const at::Tensor& qkv, int64_t n_head, double dropout, bool training);

}  // namespace atl
