// Tensor helpers shared by the tests (a unity build compiles several test
// files as one unit, so a helper two files need lives here, not twice).
#pragma once

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstdint>
#include <cstring>

namespace atl::testing {

// Same dtype, shape and bytes (NaNs with equal bits are equal). Called
// qualified: strategy_harness.h has a vector overload in atl::harness.
inline bool bitwise_equal(const at::Tensor& a, const at::Tensor& b) {
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), size_t(a.nbytes())) == 0;
}

// n standard normal values from a generator seeded with `seed`.
inline at::Tensor gaussian(int64_t n, uint64_t seed, at::ScalarType dtype = at::kFloat) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn({n}, g, at::TensorOptions().dtype(dtype));
}

}  // namespace atl::testing
