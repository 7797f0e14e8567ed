#include "strategy/codec.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

namespace atl {

namespace {

std::string allowed_names() {
  std::string s;
  for (const auto& n : codec_names()) s += (s.empty() ? "" : " | ") + n;
  return s;
}

// The contiguous payload, or std::invalid_argument naming what is wrong.
at::Tensor checked_payload(const at::Tensor& x, const std::string& codec) {
  if (!x.defined()) throw std::invalid_argument("codec " + codec + ": undefined payload");
  if (x.dim() != 1)
    throw std::invalid_argument("codec " + codec + ": payload must be 1-D, got " + std::to_string(x.dim()) +
                                "-D");
  if (x.scalar_type() != at::kFloat && x.scalar_type() != at::kDouble)
    throw std::invalid_argument("codec " + codec + ": payload must be float32 or float64, got " +
                                std::string(c10::toString(x.scalar_type())));
  if (!x.device().is_cpu()) throw std::invalid_argument("codec " + codec + ": payload must be on the CPU");
  return x.detach().contiguous();
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- casts -----------------------------------------------------------------

// fp32 / fp16 / bf16: the value on the wire is the input cast to `wire`.
class CastCodec : public Codec {
 public:
  CastCodec(std::string name, at::ScalarType wire, double bytes_per_element)
      : name_(std::move(name)), wire_(wire), bytes_per_element_(bytes_per_element) {}
  Encoded round_trip(const at::Tensor& x) override {
    const at::Tensor c = checked_payload(x, name_);
    // to() returns `c` itself when the dtype already matches: clone so decoded never aliases x.
    at::Tensor d = c.scalar_type() == wire_ ? c.clone() : c.to(wire_).to(c.scalar_type());
    return {d, bytes_for(c.numel())};
  }
  std::string name() const override { return name_; }
  double bytes_for(int64_t n) const override { return bytes_per_element_ * double(n); }

 private:
  std::string name_;
  at::ScalarType wire_;
  double bytes_per_element_;
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

class BlockCodec : public Codec {
 public:
  // grid == nullptr: int8.
  BlockCodec(std::string name, const Grid* grid, int64_t block)
      : name_(std::move(name)), grid_(grid), block_(block) {}

  Encoded round_trip(const at::Tensor& x) override {
    const at::Tensor c = checked_payload(x, name_);
    at::Tensor d = at::empty_like(c);
    const int64_t n = c.numel();
    AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "block_codec", [&] {
      const scalar_t* in = c.data_ptr<scalar_t>();
      scalar_t* out = d.data_ptr<scalar_t>();
      for (int64_t lo = 0; lo < n; lo += block_) {
        const int64_t len = std::min(n - lo, block_);
        double amax = 0;
        for (int64_t i = lo; i < lo + len; ++i) amax = std::max(amax, std::abs(double(in[i])));
        // The scale travels as fp32; a block whose max rounds to 0 decodes to zeros.
        const double m = double(static_cast<float>(amax));
        if (m == 0) {
          std::fill(out + lo, out + lo + len, scalar_t(0));
        } else if (grid_) {
          grid_block(in + lo, out + lo, len, m);
        } else {
          int8_block(in + lo, out + lo, len, m);
        }
      }
    });
    return {d, bytes_for(n)};
  }
  std::string name() const override { return name_; }
  double bytes_for(int64_t n) const override {
    const double values = grid_ ? double(ceil_div(n, 2)) : double(n);
    return values + 4.0 * double(ceil_div(n, block_));
  }

 private:
  // One block with fp32 max m > 0. Decoded values are computed in double and
  // rounded once to the output dtype; |v| may exceed m by the fp32 rounding of
  // m (float64 inputs), which clamps to the top code.
  template <typename T>
  static void int8_block(const T* in, T* out, int64_t len, double m) {
    for (int64_t i = 0; i < len; ++i) {
      const double v = double(in[i]);
      // a * 127 is exact for float inputs and the division correctly rounded, so halves are exact.
      const double q = std::min(127.0, std::nearbyint(std::abs(v) * 127.0 / m));  // default mode: half even
      out[i] = q == 0 ? T(0) : static_cast<T>(std::copysign(q * m / 127.0, v));
    }
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
      if (code < 7 && a == edge[code]) code += code & 1;  // tie between code and code + 1: the even one
      out[i] = in[i] < 0 && code > 0 ? -value[code] : value[code];  // zero is +0
    }
  }

  std::string name_;
  const Grid* grid_;
  int64_t block_;
};

// ---- top-k -----------------------------------------------------------------

class TopKCodec : public Codec {
 public:
  TopKCodec(double density, int64_t index_bytes) : density_(density), index_bytes_(index_bytes) {}

  int64_t k_for(int64_t n) const {
    if (n == 0) return 0;
    return std::clamp<int64_t>(std::llround(density_ * double(n)), 1, n);
  }

  Encoded round_trip(const at::Tensor& x) override {
    const at::Tensor c = checked_payload(x, "topk");
    const int64_t n = c.numel(), k = k_for(n);
    at::Tensor d = at::zeros_like(c);
    if (k == 0) return {d, 0.0};
    // The k-th largest |x| is unique whatever the tie order; everything above it
    // is kept, and the remaining slots go to the lowest indices equal to it.
    const at::Tensor a = c.abs();
    const double kth = std::get<0>(at::kthvalue(a, n - k + 1)).item<double>();
    AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "topk_codec", [&] {
      const scalar_t* in = c.data_ptr<scalar_t>();
      const scalar_t* mag = a.data_ptr<scalar_t>();
      scalar_t* out = d.data_ptr<scalar_t>();
      const scalar_t t = static_cast<scalar_t>(kth);
      int64_t above = 0;
      for (int64_t i = 0; i < n; ++i) above += mag[i] > t;
      int64_t ties = k - above;
      for (int64_t i = 0; i < n; ++i) {
        if (mag[i] > t || (mag[i] == t && ties-- > 0))
          out[i] = static_cast<scalar_t>(static_cast<float>(in[i]));  // fp32 on the wire
      }
    });
    return {d, bytes_for(n)};
  }
  std::string name() const override { return "topk"; }
  double bytes_for(int64_t n) const override { return double(k_for(n)) * double(4 + index_bytes_); }

 private:
  double density_;
  int64_t index_bytes_;
};

}  // namespace

const std::vector<std::string>& codec_names() {
  static const std::vector<std::string> names = {"fp32", "fp16",     "bf16",     "int8",
                                                 "fp4",  "fp4-e3m0", "fp4-e2m1", "topk"};
  return names;
}

std::unique_ptr<Codec> make_codec(const std::string& name, int64_t block, double topk_density,
                                  int64_t index_bytes) {
  if (block < 1) throw std::invalid_argument("codec block must be >= 1, got " + std::to_string(block));
  if (!(topk_density > 0 && topk_density <= 1))
    throw std::invalid_argument("codec top-k density must be in (0, 1], got " + std::to_string(topk_density));
  if (index_bytes < 1)
    throw std::invalid_argument("codec index bytes must be >= 1, got " + std::to_string(index_bytes));
  if (name == "fp32") return std::make_unique<CastCodec>(name, at::kFloat, 4);
  if (name == "fp16") return std::make_unique<CastCodec>(name, at::kHalf, 2);
  if (name == "bf16") return std::make_unique<CastCodec>(name, at::kBFloat16, 2);
  if (name == "int8") return std::make_unique<BlockCodec>(name, nullptr, block);
  if (name == "fp4" || name == "fp4-e3m0") return std::make_unique<BlockCodec>("fp4-e3m0", &kE3M0, block);
  if (name == "fp4-e2m1") return std::make_unique<BlockCodec>(name, &kE2M1, block);
  if (name == "topk") return std::make_unique<TopKCodec>(topk_density, index_bytes);
  throw std::invalid_argument("unknown codec '" + name + "': allowed values are " + allowed_names());
}

ErrorFeedback::ErrorFeedback(std::unique_ptr<Codec> codec) : codec_(std::move(codec)) {
  if (!codec_) throw std::invalid_argument("ErrorFeedback needs a codec");
}

Encoded ErrorFeedback::round_trip(const at::Tensor& x) {
  if (!x.defined()) throw std::invalid_argument("ErrorFeedback: undefined payload");
  if (residual_.defined() && (x.sizes() != residual_.sizes() || x.scalar_type() != residual_.scalar_type()))
    throw std::invalid_argument("ErrorFeedback: the payload changed shape or dtype between rounds");
  const at::Tensor y = residual_.defined() ? x.detach() + residual_ : x.detach();
  Encoded e = codec_->round_trip(y);
  residual_ = y - e.decoded;
  return e;
}

}  // namespace atl
