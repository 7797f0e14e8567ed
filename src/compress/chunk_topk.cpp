#include "compress/chunk_topk.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "compress/codec_names.h"
#include "compress/two_bit.h"

namespace atl {
namespace {

// Fixed-width fields packed from the lowest bit of each byte up.
class BitWriter {
 public:
  explicit BitWriter(uint8_t* out) : out_(out) {}
  void put(uint64_t value, int64_t bits) {
    for (int64_t b = 0; b < bits; ++b, ++pos_)
      if ((value >> b) & 1u) out_[pos_ >> 3] = uint8_t(out_[pos_ >> 3] | (1u << (pos_ & 7)));
  }

 private:
  uint8_t* out_;
  int64_t pos_ = 0;
};

class BitReader {
 public:
  explicit BitReader(const uint8_t* in) : in_(in) {}
  uint64_t get(int64_t bits) {
    uint64_t v = 0;
    for (int64_t b = 0; b < bits; ++b, ++pos_) v |= uint64_t((in_[pos_ >> 3] >> (pos_ & 7)) & 1u) << b;
    return v;
  }

 private:
  const uint8_t* in_;
  int64_t pos_ = 0;
};

int64_t packed(int64_t count, int64_t bits) { return (count * bits + 7) / 8; }

}  // namespace

ChunkTopKCodec::ChunkTopKCodec(Values values, int64_t chunk, int64_t k, std::vector<int64_t> segments)
    : values_(values), chunk_(chunk), k_(k), segments_(std::move(segments)) {
  check_chunk_sizing(chunk_, k_);
}

CodecSizing ChunkTopKCodec::sizing() const {
  CodecSizing s;
  s.chunk = chunk_;
  s.chunk_topk = k_;
  s.topk_segments = segments_;
  return s;
}

double ChunkTopKCodec::bytes_for(int64_t n) const { return codec_encoded_bytes(name(), n, sizing()); }

std::vector<ChunkTopKCodec::Chunk> ChunkTopKCodec::chunks_of(int64_t n) const {
  const std::vector<int64_t> segments = payload_segments(n, segments_, name());
  std::vector<Chunk> chunks;
  int64_t start = 0;
  for (int64_t len : segments) {
    for (int64_t lo = 0; lo < len; lo += chunk_) {
      const int64_t l = std::min(chunk_, len - lo);
      chunks.push_back({start + lo, l, chunk_kept(l, chunk_, k_)});
    }
    start += len;
  }
  return chunks;
}

ChunkTopKCodec::Layout ChunkTopKCodec::layout(const std::vector<Chunk>& chunks) const {
  Layout l;
  for (const Chunk& ch : chunks) l.kept += ch.kept;
  l.bits = chunk_index_bits(chunk_);
  const bool two_bit = values_ == Values::kTwoBit;
  l.scale_bytes = two_bit ? 4 * int64_t(chunks.size()) : 0;
  l.value_bytes = two_bit ? packed(l.kept, 2) : 4 * l.kept;
  l.total = l.scale_bytes + l.value_bytes + packed(l.kept, l.bits);
  return l;
}

Encoded ChunkTopKCodec::round_trip(const at::Tensor& x) {
  const at::Tensor c = checked_payload(x, name());
  const int64_t n = c.numel();
  const std::vector<Chunk> chunks = chunks_of(n);
  const Layout l = layout(chunks);
  const int64_t bits = l.bits, scale_bytes = l.scale_bytes, value_bytes = l.value_bytes;
  const bool two_bit = values_ == Values::kTwoBit;
  at::Tensor wire = at::zeros({l.total}, at::kByte);
  uint8_t* w = wire.data_ptr<uint8_t>();
  BitWriter codes(w + scale_bytes), positions(w + scale_bytes + value_bytes);
  at::Tensor d = at::zeros_like(c);
  AT_DISPATCH_FLOATING_TYPES(c.scalar_type(), "chunk_topk", [&] {
    const scalar_t* in = c.data_ptr<scalar_t>();
    scalar_t* out = d.data_ptr<scalar_t>();
    int64_t sent = 0;
    for (size_t ci = 0; ci < chunks.size(); ++ci) {
      const Chunk& ch = chunks[ci];
      const scalar_t* v = in + ch.start;
      // The k_c largest |v| (NaN ranks below every number), ties to the lower position.
      order_.resize(size_t(ch.len));
      magnitude_.resize(size_t(ch.len));
      std::iota(order_.begin(), order_.end(), 0);
      for (int64_t i = 0; i < ch.len; ++i) magnitude_[size_t(i)] = std::isnan(v[i]) ? -1.0 : std::abs(double(v[i]));
      const double* mag = magnitude_.data();
      auto before = [mag](int32_t a, int32_t b) { return mag[a] != mag[b] ? mag[a] > mag[b] : a < b; };
      if (ch.kept < ch.len) std::nth_element(order_.begin(), order_.begin() + ch.kept, order_.end(), before);
      std::sort(order_.begin(), order_.begin() + ch.kept);
      float m = 0;  // the chunk's scale: its largest kept |v| as float32
      for (int64_t j = 0; j < ch.kept; ++j) m = std::fmax(m, std::fabs(float(v[order_[size_t(j)]])));
      if (two_bit) std::memcpy(w + 4 * ci, &m, 4);
      for (int64_t j = 0; j < ch.kept; ++j, ++sent) {
        const int32_t at = order_[size_t(j)];
        float value = float(v[at]);
        if (two_bit) {
          const uint32_t code = two_bit_code(value, m);
          codes.put(code, 2);
          value = two_bit_level(code, m);
        } else {
          std::memcpy(w + scale_bytes + 4 * sent, &value, 4);
        }
        positions.put(uint64_t(at), bits);
        out[ch.start + at] = scalar_t(value);
      }
    }
  });
  Encoded e;
  e.decoded = d;
  e.bytes = double(wire.numel());
  e.wire = wire;
  return e;
}

void ChunkTopKCodec::add_wire(const at::Tensor& wire, at::Tensor& acc) const {
  const int64_t n = acc.numel();
  const std::vector<Chunk> chunks = chunks_of(n);
  const double expected = bytes_for(n);
  if (!wire.defined() || wire.scalar_type() != at::kByte || wire.dim() != 1 || double(wire.numel()) != expected)
    throw std::invalid_argument(
        "codec " + name() + ": a message for " + std::to_string(n) + " entries is " +
        std::to_string(int64_t(expected)) + " bytes (uint8, 1-D), got " +
        (wire.defined() ? std::to_string(wire.numel()) + " " + std::string(c10::toString(wire.scalar_type()))
                        : std::string("none")));
  if (acc.dim() != 1 || !acc.is_contiguous() || (acc.scalar_type() != at::kFloat && acc.scalar_type() != at::kDouble))
    throw std::invalid_argument("codec " + name() + ": the sum must be a contiguous 1-D float32/float64 tensor");
  const Layout l = layout(chunks);
  const int64_t kept = l.kept, bits = l.bits, scale_bytes = l.scale_bytes, value_bytes = l.value_bytes;
  const bool two_bit = values_ == Values::kTwoBit;
  const at::Tensor bytes = wire.contiguous();
  const uint8_t* w = bytes.data_ptr<uint8_t>();
  // Positions first, all of them: a bad message leaves acc as it was.
  std::vector<int64_t> where(static_cast<size_t>(kept));
  BitReader positions(w + scale_bytes + value_bytes);
  int64_t j = 0;
  for (const Chunk& ch : chunks) {
    int64_t previous = -1;
    for (int64_t i = 0; i < ch.kept; ++i, ++j) {
      const int64_t p = int64_t(positions.get(bits));
      if (p >= ch.len || p <= previous)
        throw std::invalid_argument("codec " + name() + ": position " + std::to_string(p) + " of a chunk of " +
                                    std::to_string(ch.len) + " entries is out of range or not increasing");
      previous = p;
      where[size_t(j)] = ch.start + p;
    }
  }
  BitReader codes(w + scale_bytes);
  AT_DISPATCH_FLOATING_TYPES(acc.scalar_type(), "chunk_topk_add", [&] {
    scalar_t* out = acc.data_ptr<scalar_t>();
    int64_t sent = 0;
    for (size_t ci = 0; ci < chunks.size(); ++ci) {
      float m = 0;
      if (two_bit) std::memcpy(&m, w + 4 * ci, 4);
      for (int64_t i = 0; i < chunks[ci].kept; ++i, ++sent) {
        float value;
        if (two_bit) {
          value = two_bit_level(uint32_t(codes.get(2)), m);
        } else {
          std::memcpy(&value, w + 4 * sent, 4);
        }
        out[where[size_t(sent)]] += scalar_t(value);
      }
    }
  });
}

}  // namespace atl
