// Payload codecs: simulated lossy compression of a flat buffer before it is
// communicated (ALGORITHMS.md 3, 8.5, 10).
//
// The simulator encodes each worker's payload, decodes it locally and reduces
// the decoded values in full precision, so a codec is "round trip + exact byte
// count": decoded is what every receiver would reconstruct, bytes what the
// ledger charges for the encoded message (values + indices + scales).
//
//   fp32        identity; 4 bytes/element
//   fp16, bf16  ATen's cast and back (round to nearest even); 2 bytes/element
//   int8        per block: s = max|x| / 127, q = round_half_even(x / s) in [-127, 127];
//               n + 4 * ceil(n / block) bytes
//   fp8-e4m3    per block, |x| * 448 / max|x| rounded to OCP FP8 E4M3 (3 mantissa bits, subnormals
//               down to 2^-9, no Inf), sign kept, decoded times max|x| / 448 ("fp8" is this one)
//   fp8-e5m2    the same with E5M2 (2 mantissa bits, subnormals down to 2^-16) and 57344;
//               both fp8: n + 4 * ceil(n / block) bytes (compress/fp8.h)
//   fp4-e3m0    per block, grid max|x| * {0, 2^-6, ..., 2^0} with a sign ("fp4" is this one)
//   fp4-e2m1    per block, grid (max|x| / 6) * {0, 0.5, 1, 1.5, 2, 3, 4, 6} (OCP MX FP4) with a sign;
//               both fp4: ceil(n / 2) + 4 * ceil(n / block) bytes
//   topk        the k = max(1, round(density * n)) largest |x| (lower index wins ties), rest 0;
//               k * (4 + index_bytes) bytes. Given segments (the payload's tensors,
//               codec.topk_scope = tensor), k_t = max(1, round(density * n_t)) per
//               segment (empty segments keep 0) and sum(k_t) * (4 + index_bytes) bytes
//   2bit        per block, grid max|x| * {-1, -1/3, 1/3, 1} (compress/two_bit.h);
//               ceil(n / 4) + 4 * ceil(n / block) bytes; with error feedback by default
//   sign        per block, s = mean |x| (fp32) and each x as +s (x >= 0) or -s: 1 bit each
//               (EF-signSGD's scaled sign); ceil(n / 8) + 4 * ceil(n / block) bytes; with
//               error feedback by default
//   topk-chunk, topk-chunk-2bit  SparseLoCo's chunked top-k with bit-packed positions:
//               compress/chunk_topk.h (the only codecs with a real wire format so far)
//
// Rounding in the block codecs is to the nearest grid point, ties to the even
// code (IEEE roundTiesToEven on the 3-bit magnitude code; the OCP MX rule):
// e2m1 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4;
// e3m0 (r = |x| / max) r <= 2^-7 -> 0 (tie to code 0), 0.75 * 2^e -> 2^e if the
// code of 2^e (e + 7) is even, else 2^(e-1); fp8 to the even mantissa, saturating
// at the format's largest finite value. A block codec's 4 scale bytes hold
// the block's max|x| as fp32: the same information as max/127 or max/6, and it
// makes the block maximum decode exactly.
//
// Inputs: 1-D float32 or float64 CPU tensors (non-contiguous is fine), finite.
// Full-precision values on the wire (fp32, topk) and block scales are fp32
// whatever the input dtype: a float64 payload is counted at 4 bytes/element by
// fp32 and topk and its decoded values are rounded to fp32; block codecs round
// their scale (the block max; sign's mean |x|) to fp32. A NaN entry stays in its
// block: fp8 decodes it to NaN (the block max skips it), sign decodes its whole
// block to NaN. fp16/bf16 cast float64 directly. The
// decoded tensor always has x's dtype and shape and never aliases x.
#pragma once

#include <ATen/core/Tensor.h>

#include "atoll/state.h"
#include "compress/codec_names.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace atl {

// What one encoding of a payload produced.
struct Encoded {
  at::Tensor decoded;  // same shape/dtype as the input: what the receivers reconstruct
  double bytes = 0;    // exact encoded size: values + indices + scales
  at::Tensor wire;     // codecs with a wire format (has_wire()): the message itself, bytes long (uint8)
};

class Codec {
 public:
  virtual ~Codec() = default;
  // x: 1-D float32/float64 CPU tensor. Throws std::invalid_argument otherwise.
  virtual Encoded round_trip(const at::Tensor& x) = 0;
  // The canonical name: make_codec(name(), ...) builds the same codec ("fp4" reports "fp4-e3m0").
  virtual std::string name() const = 0;
  // Encoded size of an n-element payload: the codec table's (codec_encoded_bytes)
  // for this codec's sizing. round_trip() counts what it encoded itself; the
  // CodecTable tests hold the two equal for every codec.
  virtual double bytes_for(int64_t n) const = 0;
  // Whether round_trip() also writes the encoded message (Encoded::wire):
  // the payload path then sends that message, and every receiver decodes it
  // with add_wire(). Codecs without one are modelled: their decoded values
  // travel, charged at the encoded size.
  virtual bool has_wire() const { return false; }
  // acc += the values `wire` (a peer's Encoded::wire for a payload of
  // acc.numel() elements) decodes to. A message of the wrong size or with
  // a position out of range is refused (std::invalid_argument) before acc
  // changes. Only for has_wire() codecs.
  virtual void add_wire(const at::Tensor& wire, at::Tensor& acc) const;
};

// name: one of codec_names(). block >= 1 (the block codecs), 0 < topk_density <= 1 and
// index_bytes >= 1 (topk) are checked for every name. topk_segments (topk only):
// sizes of consecutive segments selected separately, summing to every payload's
// numel; empty = the whole payload is one. Throws std::invalid_argument.
std::unique_ptr<Codec> make_codec(const std::string& name, int64_t block = kDefaultCodecBlock,
                                  double topk_density = kDefaultTopkDensity, int64_t index_bytes = 4,
                                  std::vector<int64_t> topk_segments = {});
// The same from a whole sizing (the chunked codecs' chunk and k included).
std::unique_ptr<Codec> make_codec(const std::string& name, const CodecSizing& sizing);

// For codec implementations: x as a contiguous 1-D float32/float64 CPU
// tensor, or std::invalid_argument naming codec `codec` and what is wrong.
at::Tensor checked_payload(const at::Tensor& x, const std::string& codec);

// Error feedback (Seide et al. 2014; Karimireddy et al. 2019): keeps the
// residual e of what the codec dropped and adds it to the next payload,
//   y = x + beta * e;  decoded = codec(y);  e <- y - decoded,
// With beta = 1 nothing is lost, only delayed: sum(decoded) + e == sum(x)
// over any number of rounds. SparseLoCo decays the residual (beta = 0.95),
// its accumulator standing in for the outer momentum. One object per worker
// and payload (the residual is private state).
class ErrorFeedback {
 public:
  // decay: beta in [0, 1].
  explicit ErrorFeedback(std::unique_ptr<Codec> codec, double decay = 1.0);
  // x must keep the same shape and dtype from call to call.
  Encoded round_trip(const at::Tensor& x);
  // Undefined before the first round_trip (and after reset()).
  const at::Tensor& residual() const { return residual_; }
  const Codec& codec() const { return *codec_; }
  Codec& codec() { return *codec_; }
  void reset() { residual_ = at::Tensor(); }
  void visit_state(StateVisitor& v) { v.optional_tensor("residual", residual_); }

 private:
  std::unique_ptr<Codec> codec_;
  double decay_;
  at::Tensor residual_;
};

}  // namespace atl
