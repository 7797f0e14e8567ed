// Block DCT + top-k for DeMo (compress/dct.h): invertibility, orthonormality,
// the block plan, per-block top-k and the deterministic scatter-mean.
#include "compress/dct.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "tensor_util.h"

namespace atl {
namespace {

at::Tensor gaussian_shaped(at::IntArrayRef shape, uint64_t seed, at::ScalarType dtype = at::kFloat) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn(shape, g, at::TensorOptions().dtype(dtype));
}

BlockTopK sent(std::vector<int64_t> index, std::vector<float> value, int64_t blocks) {
  const int64_t k = int64_t(index.size()) / blocks;
  return {at::tensor(index, at::kLong).reshape({blocks, k}), at::tensor(value, at::kFloat).reshape({blocks, k})};
}

TEST(DctPlan, BlockSidesAreTheLargestDivisorsAtMostTheChunk) {
  EXPECT_EQ(BlockDct({64, 64}, 64).block_shape(), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(BlockDct({128, 192}, 64).block_shape(), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(BlockDct({85, 192}, 64).block_shape(), (std::vector<int64_t>{17, 64}));  // 85 = 5 x 17
  EXPECT_EQ(BlockDct({10, 7}, 64).block_shape(), (std::vector<int64_t>{10, 7}));
  EXPECT_EQ(BlockDct({3, 200}, 64).block_shape(), (std::vector<int64_t>{3, 50}));  // 200 = 4 x 50
  EXPECT_EQ(BlockDct({100}, 64).block_shape(), (std::vector<int64_t>{50}));
  EXPECT_EQ(BlockDct({67}, 64).block_shape(), (std::vector<int64_t>{1}));  // prime above c
  EXPECT_EQ(BlockDct({96, 96}, 32).block_shape(), (std::vector<int64_t>{32, 32}));
  const BlockDct d({85, 192}, 64);
  EXPECT_EQ(d.blocks(), 5 * 3);
  EXPECT_EQ(d.block_size(), 17 * 64);
  EXPECT_EQ(dct_block_side(4096, 64), 64);
  EXPECT_EQ(dct_block_side(63, 64), 63);
  EXPECT_EQ(dct_block_side(130, 64), 26);  // 130 = 2 x 5 x 13
}

TEST(DctPlan, MoreThanTwoDimsAreFlattenedToSize0ByTheRest) {
  const BlockDct d({6, 4, 8}, 16);  // (6, 32): blocks 6 x 16
  EXPECT_EQ(d.block_shape(), (std::vector<int64_t>{6, 16}));
  EXPECT_EQ(d.blocks(), 2);
  const at::Tensor x = gaussian_shaped({6, 4, 8}, 1);
  EXPECT_TRUE(at::allclose(d.decode(d.encode(x)), x, 1e-5, 1e-5));
  EXPECT_TRUE(at::allclose(d.encode(x), BlockDct({6, 32}, 16).encode(x.reshape({6, 32}))));
}

TEST(DctPlan, BadShapesAndInputsThrowInvalidArgument) {
  EXPECT_THROW(BlockDct({0, 4}, 64), std::invalid_argument);
  EXPECT_THROW(BlockDct({4, 4}, 0), std::invalid_argument);
  const BlockDct d({8, 8}, 4);
  EXPECT_THROW(d.encode(at::zeros({8, 9})), std::invalid_argument);
  EXPECT_THROW(d.encode(at::zeros({8, 8}, at::kInt)), std::invalid_argument);
  EXPECT_THROW(d.decode(at::zeros({4, 15})), std::invalid_argument);
}

TEST(DctTransform, DecodeOfEncodeIsTheIdentityForEveryBlockShape) {
  const std::vector<std::vector<int64_t>> shapes = {{7},      {64},       {100},   {128},     {1},
                                                    {64, 64}, {128, 192}, {10, 7}, {85, 192}, {3, 200}};
  uint64_t seed = 10;
  for (const auto& s : shapes) {
    for (auto dtype : {at::kFloat, at::kDouble}) {
      const at::Tensor x = gaussian_shaped(s, seed++, dtype);
      const BlockDct d(s, 64);
      const at::Tensor c = d.encode(x);
      ASSERT_EQ(c.sizes(), (std::vector<int64_t>{d.blocks(), d.block_size()}));
      EXPECT_EQ(c.scalar_type(), dtype);
      const double tol = dtype == at::kFloat ? 1e-5 : 1e-12;
      const at::Tensor y = d.decode(c);
      EXPECT_EQ(y.sizes(), x.sizes());
      EXPECT_TRUE(at::allclose(y, x, tol, tol)) << "shape " << at::IntArrayRef(s) << " " << dtype;
      // Orthonormal blocks preserve energy (Parseval).
      EXPECT_NEAR(c.pow(2).sum().item<double>(), x.pow(2).sum().item<double>(), 1e-4 * x.numel());
    }
  }
}

TEST(DctTransform, TheDctMatrixIsOrthonormal) {
  for (int64_t n : {1, 2, 7, 17, 50, 64}) {
    const at::Tensor m = dct_matrix(n);
    EXPECT_TRUE(at::allclose(at::matmul(m, m.t()), at::eye(n, at::kDouble), 1e-12, 1e-12)) << n;
    EXPECT_TRUE(at::allclose(at::matmul(m.t(), m), at::eye(n, at::kDouble), 1e-12, 1e-12)) << n;
  }
  EXPECT_EQ(dct_matrix(8, at::kFloat).scalar_type(), at::kFloat);
}

TEST(DctTransform, AConstantBlockHasAllItsEnergyInCoefficientZero) {
  // Constant 2.5 on a 16 x 8 block: orthonormal DC coefficient 2.5 * sqrt(16 * 8).
  const BlockDct d({32, 8}, 16);
  at::Tensor x = at::full({32, 8}, 2.5, at::kDouble);
  x.narrow(0, 16, 16).fill_(-1);  // the second block: another constant
  const at::Tensor c = d.encode(x);
  ASSERT_EQ(d.blocks(), 2);
  EXPECT_NEAR(c[0][0].item<double>(), 2.5 * std::sqrt(128.0), 1e-12);
  EXPECT_NEAR(c[1][0].item<double>(), -std::sqrt(128.0), 1e-12);
  EXPECT_LT(c.narrow(1, 1, 127).abs().max().item<double>(), 1e-12);
  const BlockDct one({12}, 4);
  const at::Tensor c1 = one.encode(at::full({12}, 3.0, at::kDouble));
  EXPECT_TRUE(at::allclose(c1.select(1, 0), at::full({3}, 6.0, at::kDouble)));  // 3 * sqrt(4)
  EXPECT_LT(c1.narrow(1, 1, 3).abs().max().item<double>(), 1e-12);
}

TEST(DctTransform, CoefficientsAreRowMajorPerBlockInBlockGridOrder) {
  // Block (i, j) of a 4 x 6 tensor in 2 x 3 blocks is the i-th block row, j-th block column;
  // a delta at (u, v) of block (1, 0) affects row 1 * 2 + 0 = 2 only.
  const BlockDct d({4, 6}, 3);
  ASSERT_EQ(d.block_shape(), (std::vector<int64_t>{2, 3}));
  at::Tensor x = at::zeros({4, 6}, at::kDouble);
  x[2][1] = 1;  // block row 1, block column 0, in-block (0, 1)
  const at::Tensor c = d.encode(x);
  for (int64_t b = 0; b < d.blocks(); ++b) EXPECT_EQ(c[b].abs().sum().item<double>() > 0, b == 2) << "block " << b;
  // The coefficient (u, v) = (0, 0) is at position 0, (1, 2) at 1 * 3 + 2 = 5.
  const at::Tensor d1 = dct_matrix(2), d2 = dct_matrix(3);
  EXPECT_NEAR(c[2][5].item<double>(), d1[1][0].item<double>() * d2[2][1].item<double>(), 1e-12);
}

TEST(DctTopK, EqualsAtTopkOnAbsPerRow) {
  const at::Tensor c = gaussian_shaped({20, 256}, 30);
  const BlockTopK t = block_topk(c, 32);
  const auto ref = at::topk(c.abs(), 32, 1, true, true);
  EXPECT_TRUE(at::equal(t.index, std::get<1>(ref)));
  EXPECT_TRUE(at::equal(t.value, c.gather(1, std::get<1>(ref))));
  EXPECT_TRUE(at::equal(t.value.abs(), std::get<0>(ref)));
  EXPECT_EQ(t.index.scalar_type(), at::kLong);
}

TEST(DctTopK, KIsClampedToTheBlockSizeAndTiesGoToTheLowerIndex) {
  const at::Tensor c = at::tensor({1.f, -2.f, 2.f, 0.5f, -2.f, 0.f}, at::kFloat).reshape({1, 6});
  const BlockTopK t = block_topk(c, 2);
  EXPECT_TRUE(at::equal(t.index, at::tensor({1L, 2L}, at::kLong).reshape({1, 2})));
  EXPECT_TRUE(at::equal(t.value, at::tensor({-2.f, 2.f}, at::kFloat).reshape({1, 2})));
  const BlockTopK all = block_topk(c, 100);
  EXPECT_TRUE(at::equal(all.index, at::tensor({1L, 2L, 4L, 0L, 3L, 5L}, at::kLong).reshape({1, 6})));
  EXPECT_THROW(block_topk(c, 0), std::invalid_argument);
}

// The definition of block_topk's order, computed by sorting a whole row:
// key |v| (NaN as infinity), descending, ties to the lower index.
template <typename T>
void check_rows_against_sorting(at::ScalarType dtype, uint64_t seed) {
  const T specials[] = {T(0),
                        -T(0),
                        T(1),
                        T(-1),
                        T(0.5),
                        std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(),
                        std::numeric_limits<T>::quiet_NaN(),
                        -std::numeric_limits<T>::quiet_NaN(),
                        std::numeric_limits<T>::denorm_min()};
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> u;
  for (int64_t n : {1, 7, 64, 300}) {
    for (int64_t k : {int64_t(1), int64_t(5), n / 2 + 1, n, n + 3}) {
      const double special_share = u(rng);  // from a few ties to almost all
      at::Tensor c = at::empty({6, n}, at::TensorOptions().dtype(dtype));
      T* p = c.data_ptr<T>();
      for (int64_t i = 0; i < c.numel(); ++i)
        p[i] = u(rng) < special_share ? specials[rng() % std::size(specials)] : T(normal(rng));
      const BlockTopK got = block_topk(c, k);
      const int64_t kk = std::min(k, n);
      at::Tensor index = at::empty({6, kk}, at::kLong), value = at::empty({6, kk}, c.options());
      for (int64_t r = 0; r < 6; ++r) {
        std::vector<int64_t> order(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) order[size_t(j)] = j;
        const T* row = p + r * n;
        const auto key = [row](int64_t j) {
          return std::isnan(row[j]) ? std::numeric_limits<T>::infinity() : std::abs(row[j]);
        };
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key(a) > key(b); });
        for (int64_t j = 0; j < kk; ++j) {
          index[r][j] = order[size_t(j)];
          value.data_ptr<T>()[r * kk + j] = row[order[size_t(j)]];
        }
      }
      EXPECT_TRUE(at::equal(got.index, index)) << "n " << n << " k " << k << " " << dtype;
      EXPECT_TRUE(testing::bitwise_equal(got.value, value)) << "n " << n << " k " << k << " " << dtype;
    }
  }
}

TEST(DctTopK, MatchesSortingEachRowWithTiesNanInfinityAndSignedZeros) {
  check_rows_against_sorting<float>(at::kFloat, 31);
  check_rows_against_sorting<double>(at::kDouble, 32);
}

// DeMo works in the row layout; every function must give bitwise what the
// block-order one gives, coefficient for coefficient.
TEST(DctRowLayout, EveryFunctionGivesBitwiseTheBlockOrderResult) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{128, 192}, {85, 192}, {10, 7}, {3, 200}, {100}, {67}, {6, 4, 10}}) {
    for (auto dtype : {at::kFloat, at::kDouble}) {
      const BlockDct d(shape, 64);
      const CoefficientLayout layout = d.row_layout();
      const at::Tensor x = gaussian_shaped(shape, 40, dtype);
      const at::Tensor blocks = d.encode(x), rows = d.encode_rows(x);
      ASSERT_EQ(rows.numel(), blocks.numel());
      at::Tensor moved = at::empty_like(blocks);
      for (int64_t b = 0; b < d.blocks(); ++b)
        for (int64_t e = 0; e < d.block_size(); ++e) moved[b][e] = rows.reshape({-1})[layout.offset(b, e)];
      EXPECT_TRUE(testing::bitwise_equal(moved, blocks)) << shape.size() << " " << dtype;
      EXPECT_TRUE(testing::bitwise_equal(d.decode_rows(rows), d.decode(blocks)));
      const int64_t k = std::min<int64_t>(5, d.block_size());
      const BlockTopK a = block_topk(blocks, k), b = block_topk(rows, layout, d.blocks(), d.block_size(), k);
      EXPECT_TRUE(at::equal(a.index, b.index));
      EXPECT_TRUE(testing::bitwise_equal(a.value, b.value));
      const BlockTopK other = block_topk(gaussian_shaped({d.blocks(), d.block_size()}, 41, dtype), k);
      const at::Tensor mean_rows = scatter_mean({a, other, a}, layout, d.blocks(), d.block_size());
      const at::Tensor mean_blocks = scatter_mean({a, other, a}, d.blocks(), d.block_size());
      at::Tensor mean_moved = at::empty_like(mean_blocks);
      for (int64_t bl = 0; bl < d.blocks(); ++bl)
        for (int64_t e = 0; e < d.block_size(); ++e) mean_moved[bl][e] = mean_rows[layout.offset(bl, e)];
      EXPECT_TRUE(testing::bitwise_equal(mean_moved, mean_blocks));
    }
  }
}

TEST(DctRowLayout, SubtractDecodedIsBitwiseTheSubtractionOfTheDecodedTensor) {
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{
           {768, 256}, {256, 1024}, {85, 192}, {10, 7}, {3, 200}, {256}, {67}, {6, 4, 10}}) {
    for (auto dtype : {at::kFloat, at::kDouble}) {
      const BlockDct d(shape, 64);
      const at::Tensor coeffs = d.encode_rows(gaussian_shaped(shape, 42, dtype));
      const at::Tensor target = gaussian_shaped(shape, 43, dtype);
      at::Tensor fused = target.clone();
      d.subtract_decoded(coeffs, fused);
      EXPECT_TRUE(testing::bitwise_equal(fused, target - d.decode_rows(coeffs))) << shape.size() << " " << dtype;
    }
  }
}

TEST(DctScatterMean, AveragesOnlyOverTheWorkersThatSentACoefficient) {
  // Two blocks of 5; three workers, k = 2.
  const std::vector<BlockTopK> w = {
      sent({0, 1, 4, 2}, {1, 2, 3, 4}, 2),
      sent({1, 3, 2, 0}, {6, 7, 8, 9}, 2),
      sent({1, 0, 2, 4}, {10, 11, 12, 13}, 2),
  };
  const at::Tensor got = scatter_mean(w, 2, 5);
  // block 0: idx 0 <- {1, 11} -> 6; idx 1 <- {2, 6, 10} -> 6; idx 3 <- {7} -> 7; 2, 4 unsent.
  // block 1: idx 0 <- {9} -> 9; idx 2 <- {4, 8, 12} -> 8; idx 4 <- {3, 13} -> 8; 1, 3 unsent.
  const at::Tensor want = at::tensor({6.f, 6.f, 0.f, 7.f, 0.f, 9.f, 0.f, 8.f, 0.f, 8.f}).reshape({2, 5});
  EXPECT_TRUE(at::equal(got, want)) << got;
  EXPECT_TRUE(testing::bitwise_equal(scatter_mean(w, 2, 5), got));
}

TEST(DctScatterMean, IsBitwiseIdenticalWhenCalledTwiceOnRealCoefficients) {
  std::vector<BlockTopK> w;
  for (uint64_t s = 0; s < 4; ++s) w.push_back(block_topk(gaussian_shaped({50, 64}, 40 + s), 8));
  const at::Tensor a = scatter_mean(w, 50, 64), b = scatter_mean(w, 50, 64);
  EXPECT_TRUE(testing::bitwise_equal(a, b));
  EXPECT_GT(a.ne(0).sum().item<int64_t>(), 50 * 8);  // the workers chose different coefficients
}

TEST(DctScatterMean, RejectsMismatchedShapesAndOutOfRangeIndices) {
  EXPECT_THROW(scatter_mean({sent({0, 1}, {1, 2}, 1)}, 2, 5), std::invalid_argument);
  EXPECT_THROW(scatter_mean({sent({0, 5}, {1, 2}, 1)}, 1, 5), std::out_of_range);
  EXPECT_TRUE(at::equal(scatter_mean({}, 2, 3), at::zeros({2, 3})));
}

TEST(DctIndexBytes, SmallestIntegerTypeHoldingABlocksIndices) {
  EXPECT_EQ(index_bytes_for_block(4096), 2);
  EXPECT_EQ(index_bytes_for_block(32768), 2);
  EXPECT_EQ(index_bytes_for_block(32769), 4);
  EXPECT_EQ(index_bytes_for_block(1), 2);
}

}  // namespace
}  // namespace atl
