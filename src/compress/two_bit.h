// The 2-bit grid shared by the 2-bit codecs (SparseLoCo's "4 bins"): with a
// scale M (a block's or a chunk's largest |x|, sent as fp32), a value is sent
// as the nearest of M * {-1, -1/3, 1/3, 1}, codes 0..3 in that order, ties to
// the even code. Every receiver decodes a code with two_bit_level, so the
// sender's decoded values are the receivers' to the bit.
//
// The dense codec `2bit` (compress/codec.cpp) takes M per block of
// codec.block entries; topk-chunk-2bit (compress/chunk_topk.h) per chunk,
// over the entries it keeps.
#pragma once

#include <cmath>
#include <cstdint>

namespace atl {

// The code of v on the grid of scale m. Anything not a number (m = 0, NaN,
// Inf) maps to a valid code.
inline uint32_t two_bit_code(float v, float m) {
  double t = (double(v) / double(m) + 1.0) * 1.5;  // level i sits at t = i
  if (!(t >= 0)) t = 0;                            // also NaN
  if (t > 3) t = 3;
  return static_cast<uint32_t>(std::nearbyint(t));  // the default rounding mode: half to even
}

// The value code `code` (0..3) stands for on the grid of scale m.
inline float two_bit_level(uint32_t code, float m) {
  static constexpr float kLevels[4] = {-1.0f, -1.0f / 3.0f, 1.0f / 3.0f, 1.0f};
  return m * kLevels[code & 3u];
}

}  // namespace atl
