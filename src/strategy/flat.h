// Flat views of a parameter list: one contiguous buffer, so that a
// collective, a mask or a codec works on one vector instead of per tensor.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace atl {

// Elements of each tensor, in order: where a flat buffer's tensors begin and end.
inline std::vector<int64_t> numels_of(const std::vector<at::Tensor>& ts) {
  std::vector<int64_t> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(t.numel());
  return out;
}

// (P) concatenation of the tensors' values (a copy).
inline at::Tensor flatten_values(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> parts;
  parts.reserve(ts.size());
  for (const auto& t : ts) parts.push_back(t.detach().reshape({-1}));
  return at::cat(parts);
}

// (P) concatenation of the tensors' gradients (zeros where a grad is missing).
inline at::Tensor flatten_grads(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> parts;
  parts.reserve(ts.size());
  for (const auto& t : ts)
    parts.push_back(t.grad().defined() ? t.grad().reshape({-1}) : at::zeros({t.numel()}, t.options()));
  return at::cat(parts);
}

// Copies consecutive slices of `flat` into the tensors (no autograd history).
inline void assign_values(const at::Tensor& flat, const std::vector<at::Tensor>& ts) {
  at::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const auto& t : ts) {
    at::Tensor dst = t;
    dst.copy_(flat.narrow(0, offset, t.numel()).view_as(t));
    offset += t.numel();
  }
}

inline void assign_grads(const at::Tensor& flat, const std::vector<at::Tensor>& ts) {
  int64_t offset = 0;
  for (const auto& t : ts) {
    at::Tensor src = flat.narrow(0, offset, t.numel()).view_as(t);
    if (t.grad().defined()) {
      t.mutable_grad().copy_(src);
    } else {
      t.mutable_grad() = src.clone();
    }
    offset += t.numel();
  }
}

// Views into `flat` shaped like `like` (they share storage with `flat`).
inline std::vector<at::Tensor> views_of(const at::Tensor& flat, const std::vector<at::Tensor>& like) {
  std::vector<at::Tensor> out;
  int64_t offset = 0;
  for (const auto& t : like) {
    out.push_back(flat.narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
  return out;
}

}  // namespace atl
