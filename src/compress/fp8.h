// The two OCP 8-bit float formats the fp8 codecs round to (OCP 8-bit
// Floating Point Specification (OFP8), 2023), and their rounding:
//
//   e4m3  3 mantissa bits, normals from 2^-6, largest finite 448 = 1.75 * 2^8
//         (no infinities: 0x7F is NaN), smallest subnormal 2^-9
//   e5m2  2 mantissa bits, normals from 2^-14, largest finite 57344 = 1.75 * 2^15
//         (IEEE-like, with infinities), smallest subnormal 2^-16
//
// The codecs (compress/codec.cpp) scale each block so that its max |x| lands
// on the largest finite value, round |x| / scale here and decode in double.
// Torch-free: the tests check the rounding against the formats' code tables.
#pragma once

#include <cstdint>
#include <cstring>

namespace atl {

struct Fp8Format {
  int mantissa_bits;
  int min_exponent;   // of the normals: the smallest normal is 2^min_exponent
  double max_finite;  // largest finite magnitude
};

inline constexpr Fp8Format kFp8E4M3 = {3, -6, 448.0};
inline constexpr Fp8Format kFp8E5M2 = {2, -14, 57344.0};

// The format's value nearest to a >= 0, ties to the even code (IEEE
// roundTiesToEven, subnormals included), saturating at max_finite; NaN stays
// NaN (both formats have a NaN code). Inside a binade of exponent e (e >=
// min_exponent; below it the subnormals share min_exponent's spacing) the
// values are the multiples of q = 2^(e - mantissa_bits), and adding and
// removing C = q * 2^52 rounds a to one of them half to even: a < 2^(e+1)
// <= C, so a + C lies in [C, 2C) where a double's spacing is exactly q.
// Branch-free on the bits of a.
inline double fp8_round(double a, const Fp8Format& f) {
  const double c = a < f.max_finite ? a : f.max_finite;  // saturate (NaN too, restored below)
  uint64_t bits;
  std::memcpy(&bits, &c, sizeof bits);
  int64_t e = int64_t(bits >> 52) - 1023;  // c >= 0: no sign bit; 0 and double subnormals give -1023
  e = e < f.min_exponent ? f.min_exponent : e;
  const uint64_t magic_bits = uint64_t(e - f.mantissa_bits + 52 + 1023) << 52;
  double magic;
  std::memcpy(&magic, &magic_bits, sizeof magic);
  const double r = (c + magic) - magic;
  return a != a ? a : r;
}

}  // namespace atl
