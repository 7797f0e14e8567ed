#include "compress/codec.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "compress/chunk_topk.h"
#include "compress/fp8.h"
#include "compress/magnitude_select.h"
#include "compress/two_bit.h"
#include "compress/vector_clones.h"
#include "config/checks.h"

namespace atl {

// The contiguous payload, or std::invalid_argument naming what is wrong.
at::Tensor checked_payload(const at::Tensor& x, const std::string& codec) {
  if (!x.defined()) throw std::invalid_argument("codec " + codec + ": undefined payload");
  if (x.dim() != 1)
    throw std::invalid_argument("codec " + codec + ": payload must be 1-D, got " + std::to_string(x.dim()) + "-D");
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kDouble)
    throw std::invalid_argument("codec " + codec + ": payload must be float32 or float64, got " +
                                std::string(c10::toString(x.scalar_type())));
  if (!x.device().is_cpu()) throw std::invalid_argument("codec " + codec + ": payload must be on the CPU");
  return x.detach().contiguous();
}

namespace {

// ---- casts -----------------------------------------------------------------

// fp32 / fp16 / bf16: the value on the wire is the input cast to `wire`.
class CastCodec : public Codec {
 public:
  CastCodec(std::string name, at::ScalarType wire) : name_(std::move(name)), wire_(wire) {}
  Encoded round_trip(const at::Tensor& x) override {
    const at::Tensor c = checked_payload(x, name_);
    // to() returns `c` itself when the dtype already matches: clone so decoded never aliases x.
    at::Tensor d = c.scalar_type() == wire_ ? c.clone() : c.to(wire_).to(c.scalar_type());
    // One wire-dtype value per element, whatever the input's dtype.
    return {d, double(c.numel()) * double(c10::elementSize(wire_)), {}};
  }
  std::string name() const override { return name_; }
  double bytes_for(int64_t n) const override { return codec_encoded_bytes(name_, n); }

 private:
  std::string name_;
  at::ScalarType wire_;
};

// ---- block codecs ----------------------------------------------------------

// A sign + 3-bit magnitude code on a grid g[0] = 0 < g[1] < ... < g[7] = top,
// scaled per block so that top lands on the block's max|x|. int8 is the same
// idea with 128 codes and grid step 1, rounded with nearbyint (half to even).
struct Grid {
  std::array<double, 8> g;
  double top;
};

const Grid kE3M0 = {{0, 1.0 / 64, 1.0 / 32, 1.0 / 16, 1.0 / 8, 1.0 / 4, 1.0 / 2, 1}, 1};
const Grid kE2M1 = {{0, 0.5, 1, 1.5, 2, 3, 4, 6}, 6};

// Float32 payloads (every strategy's) take these branch-free loops, which
// the compiler vectorises; a second copy is built for AVX2 and picked at run
// time. Each gives bitwise what the generic template gives for a float64
// copy of the input, rounded to float32 (tested).
// (ATOLL_VECTOR_CLONES: compress/vector_clones.h.)

// max |x| over the block; NaNs are skipped, as std::max(acc, NaN) does.
// Eight lanes in a GCC/Clang vector type: `acc < a ? a : acc` is one
// compare and blend per lane with exactly the scalar rule's NaN handling.
ATOLL_VECTOR_CLONES float block_abs_max(const float* in, int64_t len) {
  typedef float f8 __attribute__((vector_size(32)));
  typedef int32_t i8 __attribute__((vector_size(32)));
  f8 acc = {};
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    f8 x;
    std::memcpy(&x, in + i, sizeof x);
    const f8 a = reinterpret_cast<f8>(reinterpret_cast<i8>(x) & 0x7fffffff);
    acc = acc < a ? a : acc;
  }
  float m = 0;
  for (int j = 0; j < 8; ++j) m = m < acc[j] ? acc[j] : m;
  for (; i < len; ++i) m = m < std::fabs(in[i]) ? std::fabs(in[i]) : m;
  return m;
}

// fp4 on a grid: the code is the number of edges below a = |x| * top, a tie
// with an edge going to the even code, i.e. an odd edge counts when reached
// (>=), an even one only when passed (>). edge[0..6], then value[0..7] the
// decoded magnitudes as float32 (widened to double so every lane has one
// width; value[0] = 0), then the grid's top.
ATOLL_VECTOR_CLONES void grid_block_float(const float* in, float* out, int64_t len, const double* edge,
                                          const double* value) {
  const double e0 = edge[0], e1 = edge[1], e2 = edge[2], e3 = edge[3], e4 = edge[4], e5 = edge[5], e6 = edge[6];
  const double v1 = value[1], v2 = value[2], v3 = value[3], v4 = value[4], v5 = value[5], v6 = value[6], v7 = value[7],
               top = value[8];
  for (int64_t i = 0; i < len; ++i) {
    const double a = std::fabs(double(in[i])) * top;
    double v = a > e0 ? v1 : 0.0;
    v = a >= e1 ? v2 : v;
    v = a > e2 ? v3 : v;
    v = a >= e3 ? v4 : v;
    v = a > e4 ? v5 : v;
    v = a >= e5 ? v6 : v;
    v = a > e6 ? v7 : v;
    const bool negative = (in[i] < 0) & (a > e0);  // zero is +0
    out[i] = static_cast<float>(negative ? -v : v);
  }
}

// int8, one block with fp32 max m > 0, any dtype. Decoded values are computed
// in double and rounded once to the output dtype; |v| may exceed m by the fp32
// rounding of m (float64 inputs), which clamps to the top code.
template <typename T>
void int8_block(const T* in, T* out, int64_t len, double m) {
  for (int64_t i = 0; i < len; ++i) {
    const double v = double(in[i]);
    // a * 127 is exact for float inputs and the division correctly rounded, so halves are exact.
    const double q = std::min(127.0, std::nearbyint(std::abs(v) * 127.0 / m));  // default mode: half even
    out[i] = q == 0 ? T(0) : static_cast<T>(std::copysign(q * m / 127.0, v));
  }
}

// int8: q = round-half-even(|v| * 127 / m) capped at 127, decoded as
// copysign(q * m / 127, v), +0 for q = 0. Four doubles at a time in a vector
// type (the compiler will not vectorise the selects of the scalar form);
// adding and removing 2^52 rounds 0 <= y <= 127 half to even, as nearbyint
// does in the default mode; NaN gives q = 127 as std::min(127.0, NaN) does.
ATOLL_VECTOR_CLONES void int8_block_float(const float* in, float* out, int64_t len, double m) {
  typedef float f4 __attribute__((vector_size(16)));
  typedef double d4 __attribute__((vector_size(32)));
  typedef int64_t l4 __attribute__((vector_size(32)));
  const int64_t sign = INT64_MIN;
  int64_t i = 0;
  for (; i + 4 <= len; i += 4) {
    f4 x;
    std::memcpy(&x, in + i, sizeof x);
    const d4 v = __builtin_convertvector(x, d4);
    const d4 a = reinterpret_cast<d4>(reinterpret_cast<l4>(v) & ~sign);
    d4 q = (a * 127.0 / m + 0x1p52) - 0x1p52;
    q = q < 127.0 ? q : 127.0;  // NaN compares false: 127
    const d4 r = q * m / 127.0;
    const d4 signed_r = reinterpret_cast<d4>((reinterpret_cast<l4>(r) & ~sign) | (reinterpret_cast<l4>(v) & sign));
    const d4 decoded = q == 0.0 ? d4{} : signed_r;
    const f4 y = __builtin_convertvector(decoded, f4);
    std::memcpy(out + i, &y, sizeof y);
  }
  int8_block(in + i, out + i, len - i, m);  // the last 0-3 values
}

// fp8, one block with fp32 max m > 0, any dtype: |v| * top / m rounded to
// the format (compress/fp8.h), decoded as copysign(code * m / top, v) in
// double and rounded once to the output dtype, +0 for a zero code, NaN for
// NaN. |v| * top is exact for float inputs (top has 3 significant bits) and
// the division correctly rounded, so ties with the format's midpoints (5
// significant bits at most) are exact, as int8's are.
template <typename T>
void fp8_block(const T* in, T* out, int64_t len, double m, const Fp8Format& f) {
  for (int64_t i = 0; i < len; ++i) {
    const double v = double(in[i]);
    const double q = fp8_round(std::abs(v) * f.max_finite / m, f);
    out[i] = q == 0 ? T(0) : static_cast<T>(std::copysign(q * m / f.max_finite, v));
  }
}

// int8, fp4 and fp8: a scale per block of `block` elements, the block's max
// |x| (NaN skipped) as fp32; a block whose max is 0 decodes to zeros.
class BlockCodec : public Codec {
 public:
  // int8 (grid == nullptr) and fp4 (a grid).
  BlockCodec(std::string name, const Grid* grid, int64_t block) : name_(std::move(name)), grid_(grid), block_(block) {}
  // fp8.
  BlockCodec(std::string name, const Fp8Format& fp8, int64_t block)
      : name_(std::move(name)), fp8_(&fp8), block_(block) {}

  Encoded round_trip(const at::Tensor& x) override {
    const at::Tensor c = checked_payload(x, name_);
    at::Tensor d = at::empty_like(c);
    const int64_t n = c.numel();
    if (c.scalar_type() == at::kFloat) {
      return {d, encoded_bytes(n, round_trip_float(c.data_ptr<float>(), d.data_ptr<float>(), n)), {}};
    }
    int64_t scales = 0;
    AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "block_codec", [&] {
      const scalar_t* in = c.data_ptr<scalar_t>();
      scalar_t* out = d.data_ptr<scalar_t>();
      for (int64_t lo = 0; lo < n; lo += block_, ++scales) {
        const int64_t len = std::min(n - lo, block_);
        double amax = 0;
        for (int64_t i = lo; i < lo + len; ++i) amax = std::max(amax, std::abs(double(in[i])));
        // The scale travels as fp32; a block whose max rounds to 0 decodes to zeros.
        const double m = double(static_cast<float>(amax));
        if (m == 0) {
          std::fill(out + lo, out + lo + len, scalar_t(0));
        } else if (fp8_) {
          fp8_block(in + lo, out + lo, len, m, *fp8_);
        } else if (grid_) {
          grid_block(in + lo, out + lo, len, m);
        } else {
          int8_block(in + lo, out + lo, len, m);
        }
      }
    });
    return {d, encoded_bytes(n, scales), {}};
  }
  std::string name() const override { return name_; }
  double bytes_for(int64_t n) const override {
    CodecSizing sizing;
    sizing.block = block_;
    return codec_encoded_bytes(name_, n, sizing);
  }

 private:
  // The message as encoded: n codes (int8, fp8: a byte each; fp4: two to a byte)
  // and `scales` fp32 block scales.
  double encoded_bytes(int64_t n, int64_t scales) const {
    return double(grid_ ? (n + 1) / 2 : n) + 4.0 * double(scales);
  }

  // Returns the number of blocks (scales) it encoded.
  int64_t round_trip_float(const float* in, float* out, int64_t n) const {
    std::array<double, 7> edge{};
    std::array<double, 9> value{};  // 8 decoded magnitudes, then the grid's top
    int64_t scales = 0;
    for (int64_t lo = 0; lo < n; lo += block_, ++scales) {
      const int64_t len = std::min(n - lo, block_);
      const double m = double(block_abs_max(in + lo, len));
      if (m == 0) {
        std::fill(out + lo, out + lo + len, 0.0f);
      } else if (fp8_) {
        fp8_block(in + lo, out + lo, len, m, *fp8_);
      } else if (grid_) {
        const Grid& g = *grid_;
        for (size_t c = 0; c < 7; ++c) edge[c] = 0.5 * (g.g[c] + g.g[c + 1]) * m;
        for (size_t c = 0; c < 8; ++c) value[c] = double(static_cast<float>(g.g[c] * m / g.top));
        value[8] = g.top;  // value[0] is 0: the grid starts at 0
        grid_block_float(in + lo, out + lo, len, edge.data(), value.data());
      } else {
        int8_block_float(in + lo, out + lo, len, m);
      }
    }
    return scales;
  }

  template <typename T>
  void grid_block(const T* in, T* out, int64_t len, double m) const {
    const Grid& g = *grid_;
    // Compare |v| * top with mid_c * m: both products are exact in double for
    // float inputs (top and the midpoints have <= 4 significant bits), so ties
    // are detected exactly without dividing.
    std::array<double, 7> edge;
    std::array<T, 8> value;
    for (int c = 0; c < 7; ++c) edge[size_t(c)] = 0.5 * (g.g[size_t(c)] + g.g[size_t(c) + 1]) * m;
    for (int c = 0; c < 8; ++c) value[size_t(c)] = static_cast<T>(g.g[size_t(c)] * m / g.top);
    for (int64_t i = 0; i < len; ++i) {
      const double a = std::abs(double(in[i])) * g.top;
      size_t code = 0;
      for (size_t c = 0; c < 7; ++c) code += a > edge[c];
      if (code < 7 && a == edge[code]) code += code & 1;            // tie between code and code + 1: the even one
      out[i] = in[i] < 0 && code > 0 ? -value[code] : value[code];  // zero is +0
    }
  }

  std::string name_;
  const Grid* grid_ = nullptr;      // fp4's; int8 and fp8 have none
  const Fp8Format* fp8_ = nullptr;  // fp8's format
  int64_t block_;
};

// ---- 2 bits ----------------------------------------------------------------

// Per block of `block` entries, M = the largest |x| (NaN skipped) as fp32,
// and each entry the nearest of M * {-1, -1/3, 1/3, 1} (compress/two_bit.h).
// Biased for small entries (none decodes to 0): used with error feedback.
class TwoBitCodec : public Codec {
 public:
  explicit TwoBitCodec(int64_t block) : block_(block) {}
  Encoded round_trip(const at::Tensor& x) override {
    const at::Tensor c = checked_payload(x, "2bit");
    const int64_t n = c.numel();
    at::Tensor d = at::empty_like(c);
    AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "two_bit_codec", [&] {
      const scalar_t* in = c.data_ptr<scalar_t>();
      scalar_t* out = d.data_ptr<scalar_t>();
      for (int64_t lo = 0; lo < n; lo += block_) {
        const int64_t hi = std::min(n, lo + block_);
        float m = 0;
        for (int64_t i = lo; i < hi; ++i)
          if (!std::isnan(in[i])) m = std::fmax(m, std::fabs(float(in[i])));
        for (int64_t i = lo; i < hi; ++i) out[i] = scalar_t(two_bit_level(two_bit_code(float(in[i]), m), m));
      }
    });
    return {d, bytes_for(n), {}};
  }
  std::string name() const override { return "2bit"; }
  double bytes_for(int64_t n) const override {
    CodecSizing sizing;
    sizing.block = block_;
    return codec_encoded_bytes("2bit", n, sizing);
  }

 private:
  int64_t block_;
};

// ---- signs -----------------------------------------------------------------

// Per block of `block` entries, the scale s = mean |x| over the block (the
// scale that minimises the block's squared error given the signs, and
// EF-signSGD's, Karimireddy et al. 2019) as fp32, and each entry +s if x >= 0
// else -s: one bit per entry. Biased (every entry decodes to +-s): used with
// error feedback. The mean is summed in double in index order, so float32 and
// float64 copies of a payload decode alike. A block whose scale is 0 decodes
// to +0; a NaN entry makes its block's scale NaN, so that block decodes to
// NaN and the others are untouched (an Inf one: that block to +-Inf).
class SignCodec : public Codec {
 public:
  explicit SignCodec(int64_t block) : block_(block) {}
  Encoded round_trip(const at::Tensor& x) override {
    const at::Tensor c = checked_payload(x, "sign");
    const int64_t n = c.numel();
    at::Tensor d = at::empty_like(c);
    int64_t scales = 0;
    AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "sign_codec", [&] {
      const scalar_t* in = c.data_ptr<scalar_t>();
      scalar_t* out = d.data_ptr<scalar_t>();
      for (int64_t lo = 0; lo < n; lo += block_, ++scales) {
        const int64_t hi = std::min(n, lo + block_);
        double sum = 0;
        for (int64_t i = lo; i < hi; ++i) sum += std::abs(double(in[i]));
        const float s = static_cast<float>(sum / double(hi - lo));  // the scale travels as fp32
        if (s == 0) {
          std::fill(out + lo, out + hi, scalar_t(0));
          continue;
        }
        const scalar_t plus = scalar_t(s), minus = scalar_t(-s);
        for (int64_t i = lo; i < hi; ++i) out[i] = in[i] < 0 ? minus : plus;
      }
    });
    // The message: n sign bits, packed across the whole payload, and the fp32 scales.
    return {d, double((n + 7) / 8) + 4.0 * double(scales), {}};
  }
  std::string name() const override { return "sign"; }
  double bytes_for(int64_t n) const override {
    CodecSizing sizing;
    sizing.block = block_;
    return codec_encoded_bytes("sign", n, sizing);
  }

 private:
  int64_t block_;
};

// ---- top-k -----------------------------------------------------------------

// Keeps the k largest |x| of each segment (one segment: the whole payload).
// Segments are the payload's tensors when codec.topk_scope = tensor, so a
// tensor of small entries (a LayerNorm gain's update) still sends its own
// largest ones instead of losing all of them to a tensor of large ones.
// The selection rule (ties, NaN) is in compress/magnitude_select.h.
class TopKCodec : public Codec {
 public:
  TopKCodec(double density, int64_t index_bytes, std::vector<int64_t> segments)
      : density_(density), index_bytes_(index_bytes), segments_(std::move(segments)) {}

  Encoded round_trip(const at::Tensor& x) override {
    const at::Tensor c = checked_payload(x, "topk");
    const int64_t n = c.numel();
    at::Tensor d = at::empty_like(c);  // every entry is written: kept values or +0
    int64_t kept = 0;                  // (fp32 value, index) pairs in the message
    AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "topk_codec", [&] {
      const scalar_t* in = c.data_ptr<scalar_t>();
      scalar_t* out = d.data_ptr<scalar_t>();
      int64_t lo = 0;
      for (int64_t len : segments_of(n)) {
        const int64_t k = topk_kept(len, density_);
        select_.keep_largest(in + lo, out + lo, len, k);
        lo += len;
        kept += k;
      }
    });
    return {d, double(kept) * double(4 + index_bytes_), {}};
  }
  std::string name() const override { return "topk"; }
  double bytes_for(int64_t n) const override {
    CodecSizing sizing;
    sizing.topk_density = density_;
    sizing.index_bytes = index_bytes_;
    sizing.topk_segments = segments_;
    return codec_encoded_bytes("topk", n, sizing);
  }

 private:
  std::vector<int64_t> segments_of(int64_t n) const { return payload_segments(n, segments_, "topk"); }

  double density_;
  int64_t index_bytes_;
  std::vector<int64_t> segments_;  // empty: one segment, the whole payload
  MagnitudeSelect select_;         // the selection and its scratch (one worker uses a codec)
};

// The sizing checks every name gets.
void check_sizing(int64_t block, double topk_density, int64_t index_bytes, const std::vector<int64_t>& segments) {
  if (block < 1) throw std::invalid_argument("codec block must be >= 1, got " + std::to_string(block));
  if (!(topk_density > 0 && topk_density <= 1))
    throw std::invalid_argument("codec top-k density must be in (0, 1], got " + std::to_string(topk_density));
  if (index_bytes < 1)
    throw std::invalid_argument("codec index bytes must be >= 1, got " + std::to_string(index_bytes));
  for (int64_t len : segments)
    if (len < 0) throw std::invalid_argument("codec top-k segment sizes must be >= 0, got " + std::to_string(len));
}

}  // namespace

std::unique_ptr<Codec> make_codec(const std::string& name, int64_t block, double topk_density, int64_t index_bytes,
                                  std::vector<int64_t> topk_segments) {
  CodecSizing sizing;
  sizing.block = block;
  sizing.topk_density = topk_density;
  sizing.index_bytes = index_bytes;
  sizing.topk_segments = std::move(topk_segments);
  return make_codec(name, sizing);
}

std::unique_ptr<Codec> make_codec(const std::string& name, const CodecSizing& s) {
  check_sizing(s.block, s.topk_density, s.index_bytes, s.topk_segments);
  if (name == "fp32") return std::make_unique<CastCodec>(name, at::kFloat);
  if (name == "fp16") return std::make_unique<CastCodec>(name, at::kHalf);
  if (name == "bf16") return std::make_unique<CastCodec>(name, at::kBFloat16);
  if (name == "int8") return std::make_unique<BlockCodec>(name, nullptr, s.block);
  if (name == "fp4" || name == "fp4-e3m0") return std::make_unique<BlockCodec>("fp4-e3m0", &kE3M0, s.block);
  if (name == "fp4-e2m1") return std::make_unique<BlockCodec>(name, &kE2M1, s.block);
  if (name == "fp8" || name == "fp8-e4m3") return std::make_unique<BlockCodec>("fp8-e4m3", kFp8E4M3, s.block);
  if (name == "fp8-e5m2") return std::make_unique<BlockCodec>(name, kFp8E5M2, s.block);
  if (name == "2bit") return std::make_unique<TwoBitCodec>(s.block);
  if (name == "sign") return std::make_unique<SignCodec>(s.block);
  if (name == "topk") return std::make_unique<TopKCodec>(s.topk_density, s.index_bytes, s.topk_segments);
  if (name == "topk-chunk" || name == "topk-chunk-2bit") {
    check_chunk_sizing(s.chunk, s.chunk_topk);
    const auto values = name == "topk-chunk" ? ChunkTopKCodec::Values::kFp32 : ChunkTopKCodec::Values::kTwoBit;
    return std::make_unique<ChunkTopKCodec>(values, s.chunk, s.chunk_topk, s.topk_segments);
  }
  throw std::invalid_argument("unknown codec '" + name + "': allowed values are " + join_choices(codec_names()));
}

void Codec::add_wire(const at::Tensor&, at::Tensor&) const {
  throw std::logic_error("codec " + name() + " has no wire format: its decoded values travel");
}

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> codec, double decay) : codec_(std::move(codec)), decay_(decay) {
  if (!codec_) throw std::invalid_argument("ErrorFeedback needs a codec");
  if (!(decay >= 0 && decay <= 1))
    throw std::invalid_argument("error feedback decay (beta) must be in [0, 1], got " + std::to_string(decay));
}

Encoded ErrorFeedback::round_trip(const at::Tensor& x) {
  if (!x.defined()) throw std::invalid_argument("ErrorFeedback: undefined payload");
  if (residual_.defined() && (x.sizes() != residual_.sizes() || x.scalar_type() != residual_.scalar_type()))
    throw std::invalid_argument("ErrorFeedback: the payload changed shape or dtype between rounds");
  at::Tensor y = x.detach();
  if (residual_.defined()) y = decay_ == 1.0 ? y + residual_ : y + residual_ * decay_;
  Encoded e = codec_->round_trip(y);
  residual_ = y - e.decoded;
  return e;
}

}  // namespace atl
