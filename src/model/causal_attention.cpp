#include "model/causal_attention.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <torch/autograd.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/gemm.h"

namespace atl {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Head h of part p (0 = q, 1 = k, 2 = v) of a (B, T, 3C) tensor: a
// (B, T, hs) view with row stride 3C.
at::Tensor head(const at::Tensor& qkv, int64_t part, int64_t h, int64_t C, int64_t hs) {
  return qkv.narrow(2, part * C + h * hs, hs);
}

// Every row i of each (T, T) matrix of `scores` (contiguous): columns up to
// i times `scale`, the later ones (the future) set to `future`. One pass in
// place of mul_(scale) and masked_fill_(causal mask, future), with the same
// values: the scale is rounded to the scores' compute type first (float, as
// ATen's mul does for float and bfloat16), and the products round alike.
template <class T>
void scale_past_fill_future(at::Tensor& scores, double scale, float future) {
  const int64_t n = scores.size(-1), matrices = scores.numel() / (n * n);
  const float s = static_cast<float>(scale);
  T* data = scores.data_ptr<T>();
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t i = 0; i < n; ++i) {
      T* row = data + (m * n + i) * n;
      for (int64_t j = 0; j <= i; ++j) row[j] = static_cast<T>(static_cast<float>(row[j]) * s);
      std::fill(row + i + 1, row + n, static_cast<T>(future));
    }
  }
}

void scale_causal(at::Tensor& scores, double scale, float future) {
  TORCH_CHECK(scores.is_contiguous(), "causal attention: the scores must be contiguous");
  if (scores.scalar_type() == at::kFloat) return scale_past_fill_future<float>(scores, scale, future);
  if (scores.scalar_type() == at::kBFloat16) return scale_past_fill_future<c10::BFloat16>(scores, scale, future);
  const int64_t n = scores.size(-1);
  scores.mul_(scale).masked_fill_(at::ones({n, n}, at::kBool).triu(1), future);
}

struct CausalAttention : torch::autograd::Function<CausalAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& qkv_in, int64_t n_head, double dropout,
                            bool training) {
    RECORD_FUNCTION("atl::causal_attention", std::vector<c10::IValue>());
    const at::Tensor qkv = qkv_in.contiguous();
    const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / n_head;
    // Scores per head, (n_head, B, T, T): head h's block is a dense batch.
    at::Tensor scores = at::empty({n_head, B, T, T}, qkv.options());
    for (int64_t h = 0; h < n_head; ++h)
      bmm_into(scores[h], head(qkv, 0, h, C, hs), head(qkv, 1, h, C, hs).transpose(1, 2));
    scale_causal(scores, 1.0 / std::sqrt(double(hs)), -std::numeric_limits<float>::infinity());
    // Softmax in fp32 even when the products are bf16: bf16's 8-bit mantissa
    // would round the attention weights.
    const at::Tensor probs = scores.softmax(-1, at::kFloat);
    at::Tensor kept;  // dropout's scaled keep mask, drawn in (B, n_head, T, T) order as at::dropout would
    at::Tensor used = probs;
    if (dropout > 0 && training) {
      kept = at::empty({B, n_head, T, T}, probs.options()).bernoulli_(1 - dropout).div_(1 - dropout).transpose(0, 1);
      used = probs * kept;
    }
    const at::Tensor used_low = used.to(qkv.scalar_type());
    at::Tensor y = at::empty({B, T, C}, qkv.options());
    for (int64_t h = 0; h < n_head; ++h) bmm_into(y.narrow(2, h * hs, hs), used_low[h], head(qkv, 2, h, C, hs));
    ctx->save_for_backward({qkv, probs, used_low, kept});
    ctx->saved_data["n_head"] = n_head;
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("atl::causal_attention_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &qkv = saved[0], &probs = saved[1], &used_low = saved[2], &kept = saved[3];
    const int64_t n_head = ctx->saved_data["n_head"].toInt();
    const int64_t B = qkv.size(0), T = qkv.size(1), C = qkv.size(2) / 3, hs = C / n_head;
    const at::Tensor gy = grads[0].to(qkv.scalar_type()).contiguous();
    at::Tensor gqkv = at::empty_like(qkv);  // every column is written below: q, k and v of every head
    at::Tensor g_used = at::empty({n_head, B, T, T}, qkv.options());
    for (int64_t h = 0; h < n_head; ++h) {
      const at::Tensor gy_h = gy.narrow(2, h * hs, hs);
      bmm_into(g_used[h], gy_h, head(qkv, 2, h, C, hs).transpose(1, 2));     // dP = dY V^T
      bmm_into(head(gqkv, 2, h, C, hs), used_low[h].transpose(1, 2), gy_h);  // dV = P^T dY
    }
    at::Tensor g_probs = g_used.to(at::kFloat);
    if (kept.defined()) g_probs = g_probs * kept;
    // The softmax ran on an fp32 copy of the scores: its backward is fp32,
    // then back to the scores' dtype (the copy's backward).
    at::Tensor g_scores = at::_softmax_backward_data(g_probs, probs, -1, at::kFloat).to(qkv.scalar_type());
    scale_causal(g_scores, 1.0 / std::sqrt(double(hs)), 0.f);
    // dK^T = Q^T dS goes through a dense (hs, T) block and is copied into
    // place transposed: written in place, dK = dS^T Q would be the product
    // of the transposed matrices, which BLAS sums in another order (last
    // bits differ). The block is a third of the qkv gradient, one head at a time.
    at::Tensor dk_t = at::empty({B, hs, T}, qkv.options());
    for (int64_t h = 0; h < n_head; ++h) {
      bmm_into(head(gqkv, 0, h, C, hs), g_scores[h], head(qkv, 1, h, C, hs));  // dQ = dS K
      bmm_into(dk_t, head(qkv, 0, h, C, hs).transpose(1, 2), g_scores[h]);
      head(gqkv, 1, h, C, hs).copy_(dk_t.transpose(1, 2));
    }
    return {gqkv, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor causal_attention(const at::Tensor& qkv, int64_t n_head, double dropout, bool training) {
  // Under autocast (train.precision = bf16) the products take bf16 operands,
  // as autocast's own wrapper would give at::bmm; the cast's backward returns
  // an fp32 gradient to an fp32 input. Inside, everything runs in one dtype.
  if (at::autocast::is_cpu_enabled()) {
    at::Tensor low = qkv.to(at::autocast::get_autocast_cpu_dtype());
    c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::DispatchKey::AutocastCPU);
    return CausalAttention::apply(low, n_head, dropout, training);
  }
  return CausalAttention::apply(qkv, n_head, dropout, training);
}

}  // namespace atl
