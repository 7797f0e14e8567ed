// Block DCT + per-block top-k, the compressor of DeMo (ALGORITHMS.md 6(a),
// bloc97/DeMo `TransformDCT` / `CompressDCT`).
//
// A tensor of shape (a, b) is cut into n1 x n2 blocks, n1 = the largest
// divisor of a that is <= chunk and n2 likewise for b, and each block gets the
// orthonormal 2-D DCT-II (C = D1 X D2^T). A 1-D tensor (a) uses 1-D blocks of
// n1; a tensor with more than two dimensions is treated as the 2-D
// (size(0), numel / size(0)) (the reference only meets 1-D and 2-D weights);
// a 0-dim tensor as the 1-D (1). A size with no divisor in (1, chunk], such as a
// prime above chunk, gets blocks of 1 along that axis: the reference does the same.
//
// Coefficients are laid out (blocks, n1 * n2): blocks in row-major order of the
// block grid (a / n1, b / n2), each block's coefficients row-major (u * n2 + v),
// the reference's "y x h w -> (y x) (h w)" layout.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace atl {

// The largest divisor of size (>= 1) that is <= chunk (>= 1).
int64_t dct_block_side(int64_t size, int64_t chunk);

// The (n, n) orthonormal DCT-II matrix: D[k][j] = s_k cos(pi (2j + 1) k / 2n),
// s_0 = sqrt(1 / n), s_k = sqrt(2 / n); coefficients of a vector x are D x.
// Computed in double, then cast to dtype (float or double).
at::Tensor dct_matrix(int64_t n, at::ScalarType dtype = at::kDouble);

// Where a coefficient lives when it is kept in the tensor's own layout (the
// "row layout") instead of block order: block b = (r, c) of the (a / n1, b / n2)
// grid, coefficient e = u * n2 + v, at row r * n1 + u, column c * n2 + v of
// the 2-D view. Block order is the layout {1, 1, block_size}. DeMo works in
// the row layout so that no transform needs a copy into or out of block order.
struct CoefficientLayout {
  int64_t n1 = 1, blocks_per_row = 1, n2 = 1;
  int64_t offset(int64_t block, int64_t e) const {
    const int64_t r = block / blocks_per_row, c = block % blocks_per_row;
    return ((r * n1 + e / n2) * blocks_per_row + c) * n2 + e % n2;
  }
};

class BlockDct {
 public:
  // Plans the blocks of a tensor of `shape` (non-empty) for chunk c >= 1 (DeMo: 64).
  BlockDct(at::IntArrayRef shape, int64_t chunk);
  // x: float32/float64 of the planned shape -> (blocks, block_size) of x's dtype.
  at::Tensor encode(const at::Tensor& x) const;
  // coeffs: (blocks, block_size) -> a tensor of the planned shape.
  at::Tensor decode(const at::Tensor& coeffs) const;
  // The same coefficients in row_layout(): encode without its final copy
  // into block order (a contiguous tensor of numel blocks * block_size), and
  // decode of such a tensor without the copy out of block order. Bitwise the
  // values encode / decode compute.
  at::Tensor encode_rows(const at::Tensor& x) const;
  at::Tensor decode_rows(const at::Tensor& coeffs) const;
  // target (contiguous, of the planned shape) -= decode_rows(coeffs), the
  // subtraction done by the last GEMM (C = C - A B): no decoded tensor and no
  // separate pass. Bitwise target.sub_(decode_rows(coeffs)): -1 times the
  // product is exact and the difference is rounded once either way.
  void subtract_decoded(const at::Tensor& coeffs, at::Tensor& target) const;
  CoefficientLayout row_layout() const;
  int64_t blocks() const { return (rows_ / n1_) * (cols_ / n2_); }
  int64_t block_size() const { return n1_ * n2_; }
  // FLOPs of one encode or decode: every entry takes part in a length-n1
  // transform along rows (and a length-n2 one along columns for a 2-D plan),
  // each a multiply-add per coefficient (the modelled clock charges these).
  double transform_flops() const { return 2.0 * double(rows_ * cols_) * double(n1_ + (two_d_ ? n2_ : 0)); }
  // {n1} for a 1-D plan, {n1, n2} for a 2-D one.
  std::vector<int64_t> block_shape() const;
  const std::vector<int64_t>& shape() const { return shape_; }

 private:
  const at::Tensor& matrix(int64_t n, at::ScalarType dtype) const;

  std::vector<int64_t> shape_;
  bool two_d_ = false;
  int64_t rows_ = 1, cols_ = 1;  // the 2-D view; a 1-D plan has cols_ = n2_ = 1
  int64_t n1_ = 1, n2_ = 1;      // block sides along rows_ and cols_
  // The per-size cache: DCT matrices of n1 and n2 in float and in double, built once.
  std::vector<int64_t> sizes_;
  std::vector<at::Tensor> float_, double_;
};

// The k entries of largest |value| in each row of coeffs (blocks, block_size),
// k clamped to block_size. index (blocks, k) int64, value (blocks, k) the signed
// coefficients. Order within a row: decreasing |value|, ties (and the choice at
// the k-th place) to the lower index, so the result never depends on how
// at::topk breaks ties. NaN counts as larger than everything.
struct BlockTopK {
  at::Tensor index;
  at::Tensor value;
};
BlockTopK block_topk(const at::Tensor& coeffs, int64_t k);
// The same from coefficients in `layout` (coeffs: contiguous, numel blocks * block_size).
BlockTopK block_topk(const at::Tensor& coeffs, const CoefficientLayout& layout, int64_t blocks, int64_t block_size,
                     int64_t k);

// Every worker's (index, value) scattered into (blocks, block_size), per
// coefficient the MEAN over the workers that sent it (the reference's
// scatter_reduce "mean", include_self = False); unsent coefficients are 0.
// Workers are summed in the given order in the values' dtype, so the result is
// bitwise reproducible. Workers may use different k; an index repeated within
// one worker's row counts as two senders.
at::Tensor scatter_mean(const std::vector<BlockTopK>& from_workers, int64_t blocks, int64_t block_size);
// The same written in `layout`: a 1-D tensor of blocks * block_size entries.
at::Tensor scatter_mean(const std::vector<BlockTopK>& from_workers, const CoefficientLayout& layout, int64_t blocks,
                        int64_t block_size);

// Bytes of the smallest integer type holding every index of a block:
// 2 (int16) up to 32768 entries, 4 (int32) up to 2^31, else 8.
int64_t index_bytes_for_block(int64_t block_size);

}  // namespace atl
