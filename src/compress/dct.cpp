#include "compress/dct.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "compress/vector_clones.h"

namespace atl {

namespace {

std::string shape_str(at::IntArrayRef s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

void check_float(const at::Tensor& t, const char* what) {
  if (!t.defined() || (t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble))
    throw std::invalid_argument(std::string(what) + " must be a float32 or float64 tensor");
  if (!t.device().is_cpu()) throw std::invalid_argument(std::string(what) + " must be on the CPU");
}

// block_topk's keys for a run of coefficients: |v|'s bit pattern (sign
// cleared), which orders like |v|, with NaN's patterns (above infinity's)
// clamped to infinity's, so NaN ties with infinity as a float key would.
// Branch-free, so the compiler vectorises them (AVX2 clones on x86-64).
ATOLL_VECTOR_CLONES void magnitude_keys(const float* in, uint32_t* key, int64_t len) {
  for (int64_t i = 0; i < len; ++i) {
    uint32_t bits;
    std::memcpy(&bits, in + i, sizeof bits);
    const uint32_t k = bits & 0x7fffffffu;
    key[i] = k < 0x7f800000u ? k : 0x7f800000u;
  }
}
ATOLL_VECTOR_CLONES void magnitude_keys(const double* in, uint64_t* key, int64_t len) {
  for (int64_t i = 0; i < len; ++i) {
    uint64_t bits;
    std::memcpy(&bits, in + i, sizeof bits);
    const uint64_t k = bits & 0x7fffffffffffffffull;
    key[i] = k < 0x7ff0000000000000ull ? k : 0x7ff0000000000000ull;
  }
}
ATOLL_VECTOR_CLONES uint32_t max_key(const uint32_t* key, int64_t len) {
  uint32_t m = 0;
  for (int64_t i = 0; i < len; ++i) m = m < key[i] ? key[i] : m;
  return m;
}
ATOLL_VECTOR_CLONES uint64_t max_key(const uint64_t* key, int64_t len) {
  uint64_t m = 0;
  for (int64_t i = 0; i < len; ++i) m = m < key[i] ? key[i] : m;
  return m;
}

}  // namespace

int64_t dct_block_side(int64_t size, int64_t chunk) {
  if (size < 1 || chunk < 1)
    throw std::invalid_argument("dct_block_side needs size >= 1 and chunk >= 1, got " + std::to_string(size) + ", " +
                                std::to_string(chunk));
  for (int64_t d = std::min(size, chunk); d > 1; --d)
    if (size % d == 0) return d;
  return 1;
}

at::Tensor dct_matrix(int64_t n, at::ScalarType dtype) {
  if (n < 1) throw std::invalid_argument("dct_matrix needs n >= 1, got " + std::to_string(n));
  at::Tensor m = at::empty({n, n}, at::kDouble);
  double* p = m.data_ptr<double>();
  for (int64_t k = 0; k < n; ++k) {
    const double s = std::sqrt((k == 0 ? 1.0 : 2.0) / double(n));
    for (int64_t j = 0; j < n; ++j) p[k * n + j] = s * std::cos(M_PI * double(2 * j + 1) * double(k) / double(2 * n));
  }
  return m.to(dtype);
}

BlockDct::BlockDct(at::IntArrayRef shape, int64_t chunk) : shape_(shape.vec()) {
  if (chunk < 1) throw std::invalid_argument("BlockDct needs chunk >= 1, got " + std::to_string(chunk));
  int64_t numel = 1;
  for (int64_t s : shape_) numel *= s;
  if (numel < 1) throw std::invalid_argument("BlockDct needs a non-empty shape, got " + shape_str(shape));
  two_d_ = shape_.size() >= 2;
  rows_ = shape_.empty() ? 1 : shape_[0];
  cols_ = numel / rows_;
  n1_ = dct_block_side(rows_, chunk);
  n2_ = two_d_ ? dct_block_side(cols_, chunk) : 1;
  for (int64_t n : {n1_, n2_}) {
    if (std::find(sizes_.begin(), sizes_.end(), n) != sizes_.end()) continue;
    sizes_.push_back(n);
    double_.push_back(dct_matrix(n, at::kDouble));
    float_.push_back(double_.back().to(at::kFloat));
  }
}

std::vector<int64_t> BlockDct::block_shape() const {
  return two_d_ ? std::vector<int64_t>{n1_, n2_} : std::vector<int64_t>{n1_};
}

const at::Tensor& BlockDct::matrix(int64_t n, at::ScalarType dtype) const {
  const size_t i = size_t(std::find(sizes_.begin(), sizes_.end(), n) - sizes_.begin());
  return dtype == at::kDouble ? double_.at(i) : float_.at(i);
}

CoefficientLayout BlockDct::row_layout() const {
  // A 1-D plan's blocks are contiguous runs of n1: its row layout is block order.
  return two_d_ ? CoefficientLayout{n1_, cols_ / n2_, n2_} : CoefficientLayout{1, 1, n1_};
}

at::Tensor BlockDct::encode_rows(const at::Tensor& x) const {
  check_float(x, "BlockDct::encode input");
  if (x.sizes() != at::IntArrayRef(shape_))
    throw std::invalid_argument("BlockDct planned for " + shape_str(shape_) + ", got " + shape_str(x.sizes()));
  const at::Tensor& d1 = matrix(n1_, x.scalar_type());
  if (!two_d_) {
    // Rows of (a / n1, n1) are blocks: c = D1 x for each, i.e. X D1^T.
    return at::matmul(x.detach().reshape({rows_ / n1_, n1_}), d1.t()).contiguous();
  }
  // D1 X D2^T of every block as two plain GEMMs on the tensor's own layout,
  // (a, b) = (R n1, C n2) viewed (R, n1, C n2): D1 times each row of blocks
  // (R GEMMs of n1 x n1 by n1 x b), then D2 on every length-n2 run of a row
  // (one GEMM of a b / n2 x n2 by n2 x n2). The same products in the same
  // order as per-block matmuls, without expanding D1 per block or copying X
  // into block order first.
  const at::Tensor& d2 = matrix(n2_, x.scalar_type());
  const int64_t R = rows_ / n1_, C = cols_ / n2_;
  const at::Tensor t = at::bmm(d1.expand({R, n1_, n1_}), x.detach().reshape({R, n1_, cols_}));
  return at::mm(t.view({rows_ * C, n2_}), d2.t());
}

at::Tensor BlockDct::encode(const at::Tensor& x) const {
  const at::Tensor c = encode_rows(x);
  if (!two_d_) return c;
  return c.view({rows_ / n1_, n1_, cols_ / n2_, n2_}).permute({0, 2, 1, 3}).reshape({blocks(), block_size()});
}

at::Tensor BlockDct::decode_rows(const at::Tensor& coeffs) const {
  check_float(coeffs, "BlockDct::decode input");
  if (coeffs.numel() != blocks() * block_size())
    throw std::invalid_argument("BlockDct::decode expects " + std::to_string(blocks() * block_size()) +
                                " coefficients, got " + shape_str(coeffs.sizes()));
  const at::Tensor& d1 = matrix(n1_, coeffs.scalar_type());
  if (!two_d_) return at::matmul(coeffs.reshape({blocks(), n1_}), d1).reshape(shape_);  // the inverse is D^T
  // encode's steps backwards: D1^T on each row of blocks, then D2 on every length-n2 run.
  const at::Tensor& d2 = matrix(n2_, coeffs.scalar_type());
  const int64_t R = rows_ / n1_, C = cols_ / n2_;
  const at::Tensor t = at::bmm(d1.t().expand({R, n1_, n1_}), coeffs.reshape({R, n1_, cols_}));
  return at::mm(t.view({rows_ * C, n2_}), d2).view(shape_);
}

void BlockDct::subtract_decoded(const at::Tensor& coeffs, at::Tensor& target) const {
  check_float(coeffs, "BlockDct::decode input");
  if (coeffs.numel() != blocks() * block_size() || target.sizes() != at::IntArrayRef(shape_) ||
      !target.is_contiguous() || target.scalar_type() != coeffs.scalar_type())
    throw std::invalid_argument("BlockDct::subtract_decoded: coefficients " + shape_str(coeffs.sizes()) +
                                " and target " + shape_str(target.sizes()) + " do not fit the plan " +
                                shape_str(shape_));
  const at::Tensor& d1 = matrix(n1_, coeffs.scalar_type());
  if (!two_d_) {
    target.view({blocks(), n1_}).addmm_(coeffs.reshape({blocks(), n1_}), d1, 1, -1);
    return;
  }
  const at::Tensor& d2 = matrix(n2_, coeffs.scalar_type());
  const int64_t R = rows_ / n1_, C = cols_ / n2_;
  const at::Tensor t = at::bmm(d1.t().expand({R, n1_, n1_}), coeffs.reshape({R, n1_, cols_}));
  target.view({rows_ * C, n2_}).addmm_(t.view({rows_ * C, n2_}), d2, 1, -1);
}

at::Tensor BlockDct::decode(const at::Tensor& coeffs) const {
  check_float(coeffs, "BlockDct::decode input");
  if (coeffs.dim() != 2 || coeffs.size(0) != blocks() || coeffs.size(1) != block_size())
    throw std::invalid_argument("BlockDct::decode expects (" + std::to_string(blocks()) + ", " +
                                std::to_string(block_size()) + ") coefficients, got " + shape_str(coeffs.sizes()));
  if (!two_d_) return decode_rows(coeffs);
  // One copy from block order into the tensor's layout.
  return decode_rows(
      coeffs.reshape({rows_ / n1_, cols_ / n2_, n1_, n2_}).permute({0, 2, 1, 3}).reshape({rows_, cols_}));
}

BlockTopK block_topk(const at::Tensor& coeffs, int64_t k) {
  check_float(coeffs, "block_topk input");
  if (coeffs.dim() != 2) throw std::invalid_argument("block_topk expects (blocks, block_size) coefficients");
  return block_topk(coeffs.contiguous(), CoefficientLayout{1, 1, coeffs.size(1)}, coeffs.size(0), coeffs.size(1), k);
}

BlockTopK block_topk(const at::Tensor& coeffs, const CoefficientLayout& layout, int64_t blocks, int64_t block_size,
                     int64_t k) {
  check_float(coeffs, "block_topk input");
  if (!coeffs.is_contiguous() || coeffs.numel() != blocks * block_size || layout.n1 * layout.n2 != block_size)
    throw std::invalid_argument("block_topk expects contiguous coefficients of " + std::to_string(blocks) +
                                " blocks of " + std::to_string(block_size) + ", got " + shape_str(coeffs.sizes()));
  if (k < 1) throw std::invalid_argument("block_topk needs k >= 1, got " + std::to_string(k));
  const at::Tensor c = coeffs.detach();
  const int64_t rows = blocks, n = block_size;
  k = std::min(k, n);
  BlockTopK out{at::empty({rows, k}, at::kLong), at::empty({rows, k}, c.options())};
  AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "block_topk", [&] {
    using U = std::conditional_t<sizeof(scalar_t) == 4, uint32_t, uint64_t>;
    // Integer keys (magnitude_keys above) rank like |v|; no float comparator.
    std::vector<U> key(static_cast<size_t>(n));
    // Groups of the row: at least k of them, so the k-th largest group
    // maximum is a key that k entries reach; the k-th largest entry is at or
    // above it. Entries from there up are the candidates: for k = 32 of 4096
    // distinct values, typically k and a few dozen more, not the whole row.
    const int64_t group = (n + std::min(n, 2 * k) - 1) / std::min(n, 2 * k);
    const int64_t groups = (n + group - 1) / group;
    std::vector<U> group_max(static_cast<size_t>(groups)), maxima(static_cast<size_t>(groups));
    std::vector<std::pair<U, int64_t>> cand(static_cast<size_t>(n));
    // The strict total order (|v| descending, then index ascending): the k
    // first are unique, whatever order a selection leaves ties in.
    const auto before = [](const std::pair<U, int64_t>& a, const std::pair<U, int64_t>& b) {
      return a.first > b.first || (a.first == b.first && a.second < b.second);
    };
    const scalar_t* in = c.data_ptr<scalar_t>();
    int64_t* index = out.index.data_ptr<int64_t>();
    scalar_t* value = out.value.data_ptr<scalar_t>();
    U* const kp = key.data();
    for (int64_t r = 0; r < rows; ++r) {
      // A block is n1 runs of n2 contiguous coefficients in the layout.
      for (int64_t u = 0; u < layout.n1; ++u)
        magnitude_keys(in + layout.offset(r, u * layout.n2), kp + u * layout.n2, layout.n2);
      for (int64_t g = 0; g < groups; ++g)
        group_max[size_t(g)] = max_key(kp + g * group, std::min(group, n - g * group));
      maxima = group_max;
      std::nth_element(maxima.begin(), maxima.begin() + (k - 1), maxima.end(), std::greater<U>());
      const U low = maxima[size_t(k - 1)];
      // Only groups whose maximum reaches `low` hold candidates.
      int64_t count = 0;
      for (int64_t g = 0; g < groups; ++g) {
        if (group_max[size_t(g)] < low) continue;
        for (int64_t j = g * group; j < std::min(n, (g + 1) * group); ++j)
          if (kp[j] >= low) cand[size_t(count++)] = {kp[j], j};
      }
      auto last = cand.begin() + count;
      if (count > 4 * k + 64) {  // many ties at the threshold: select, then sort
        std::nth_element(cand.begin(), cand.begin() + (k - 1), last, before);
        last = cand.begin() + k;
      }
      std::sort(cand.begin(), last, before);
      for (int64_t j = 0; j < k; ++j) {
        index[r * k + j] = cand[size_t(j)].second;
        value[r * k + j] = in[layout.offset(r, cand[size_t(j)].second)];
      }
    }
  });
  return out;
}

at::Tensor scatter_mean(const std::vector<BlockTopK>& from_workers, int64_t blocks, int64_t block_size) {
  if (block_size < 1) throw std::invalid_argument("scatter_mean needs blocks >= 0 and block_size >= 1");
  return scatter_mean(from_workers, CoefficientLayout{1, 1, block_size}, blocks, block_size).view({blocks, block_size});
}

at::Tensor scatter_mean(const std::vector<BlockTopK>& from_workers, const CoefficientLayout& layout, int64_t blocks,
                        int64_t block_size) {
  if (blocks < 0 || block_size < 1 || layout.n1 * layout.n2 != block_size)
    throw std::invalid_argument("scatter_mean needs blocks >= 0 and block_size >= 1");
  const at::ScalarType dtype = from_workers.empty() ? at::kFloat : from_workers[0].value.scalar_type();
  std::vector<at::Tensor> idx, val;
  for (size_t w = 0; w < from_workers.size(); ++w) {
    const BlockTopK& s = from_workers[w];
    check_float(s.value, "scatter_mean values");
    if (!s.index.defined() || s.index.scalar_type() != at::kLong || !s.index.device().is_cpu())
      throw std::invalid_argument("scatter_mean indices must be int64 CPU tensors");
    if (s.value.scalar_type() != dtype) throw std::invalid_argument("scatter_mean: workers' values differ in dtype");
    if (s.index.dim() != 2 || s.index.sizes() != s.value.sizes() || s.index.size(0) != blocks)
      throw std::invalid_argument("scatter_mean: worker " + std::to_string(w) + " sent index " +
                                  shape_str(s.index.sizes()) + " and value " + shape_str(s.value.sizes()) +
                                  ", expected matching (" + std::to_string(blocks) + ", k)");
    idx.push_back(s.index.contiguous());
    val.push_back(s.value.contiguous());
  }
  at::Tensor sum = at::zeros({blocks * block_size}, at::TensorOptions().dtype(dtype));
  // Senders per coefficient of the current block only; reset as they are used.
  std::vector<int32_t> senders(static_cast<size_t>(block_size), 0);
  AT_DISPATCH_FLOATING_TYPES(dtype, "scatter_mean", [&] {
    scalar_t* out = sum.data_ptr<scalar_t>();
    for (int64_t r = 0; r < blocks; ++r) {
      // Workers in the given order: every coefficient's sum runs in rank order.
      for (size_t w = 0; w < idx.size(); ++w) {
        const int64_t k = idx[w].size(1);
        const int64_t* ip = idx[w].data_ptr<int64_t>() + r * k;
        const scalar_t* vp = val[w].data_ptr<scalar_t>() + r * k;
        for (int64_t j = 0; j < k; ++j) {
          const int64_t i = ip[j];
          if (i < 0 || i >= block_size)
            throw std::out_of_range("scatter_mean: worker " + std::to_string(w) + " sent index " + std::to_string(i) +
                                    " outside a block of " + std::to_string(block_size));
          out[layout.offset(r, i)] += vp[j];
          senders[size_t(i)] += 1;
        }
      }
      for (size_t w = 0; w < idx.size(); ++w) {
        const int64_t k = idx[w].size(1);
        const int64_t* ip = idx[w].data_ptr<int64_t>() + r * k;
        for (int64_t j = 0; j < k; ++j) {
          int32_t& n = senders[size_t(ip[j])];
          if (n > 1) out[layout.offset(r, ip[j])] /= static_cast<scalar_t>(n);
          n = 0;  // divided once; later mentions of the coefficient find 0
        }
      }
    }
  });
  return sum;
}

int64_t index_bytes_for_block(int64_t block_size) {
  if (block_size < 1) throw std::invalid_argument("index_bytes_for_block needs block_size >= 1");
  if (block_size <= (int64_t(1) << 15)) return 2;
  if (block_size <= (int64_t(1) << 31)) return 4;
  return 8;
}

}  // namespace atl
