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
//   fp4-e3m0    per block, grid max|x| * {0, 2^-6, ..., 2^0} with a sign ("fp4" is this one)
//   fp4-e2m1    per block, grid (max|x| / 6) * {0, 0.5, 1, 1.5, 2, 3, 4, 6} (OCP MX FP4) with a sign;
//               both fp4: ceil(n / 2) + 4 * ceil(n / block) bytes
//   topk        the k = max(1, round(density * n)) largest |x| (lower index wins ties), rest 0;
//               k * (4 + index_bytes) bytes. Given segments (the payload's tensors,
//               codec.topk_scope = tensor), k_t = max(1, round(density * n_t)) per
//               segment (empty segments keep 0) and sum(k_t) * (4 + index_bytes) bytes
//
// Rounding in the block codecs is to the nearest grid point, ties to the even
// code (IEEE roundTiesToEven on the 3-bit magnitude code; the OCP MX rule):
// e2m1 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4;
// e3m0 (r = |x| / max) r <= 2^-7 -> 0 (tie to code 0), 0.75 * 2^e -> 2^e if the
// code of 2^e (e + 7) is even, else 2^(e-1). A block codec's 4 scale bytes hold
// the block's max|x| as fp32: the same information as max/127 or max/6, and it
// makes the block maximum decode exactly.
//
// Inputs: 1-D float32 or float64 CPU tensors (non-contiguous is fine), finite.
// Full-precision values on the wire (fp32, topk) and block scales are fp32
// whatever the input dtype: a float64 payload is counted at 4 bytes/element by
// fp32 and topk and its decoded values are rounded to fp32; block codecs round
// their scale (the block max) to fp32. fp16/bf16 cast float64 directly. The
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
};

// name: one of codec_names(). block >= 1 (int8, fp4), 0 < topk_density <= 1 and
// index_bytes >= 1 (topk) are checked for every name. topk_segments (topk only):
// sizes of consecutive segments selected separately, summing to every payload's
// numel; empty = the whole payload is one. Throws std::invalid_argument.
std::unique_ptr<Codec> make_codec(const std::string& name, int64_t block = kDefaultCodecBlock,
                                  double topk_density = kDefaultTopkDensity, int64_t index_bytes = 4,
                                  std::vector<int64_t> topk_segments = {});

// Error feedback (Seide et al. 2014; Karimireddy et al. 2019): keeps the
// residual e of what the codec dropped and adds it to the next payload,
//   y = x + e;  decoded = codec(y);  e <- y - decoded,
// so nothing is lost, only delayed: sum(decoded) + e == sum(x) over any number
// of rounds. One object per worker and payload (the residual is private state).
class ErrorFeedback {
 public:
  explicit ErrorFeedback(std::unique_ptr<Codec> codec);
  // x must keep the same shape and dtype from call to call.
  Encoded round_trip(const at::Tensor& x);
  // Undefined before the first round_trip (and after reset()).
  const at::Tensor& residual() const { return residual_; }
  const Codec& codec() const { return *codec_; }
  void reset() { residual_ = at::Tensor(); }
  void visit_state(StateVisitor& v) { v.optional_tensor("residual", residual_); }

 private:
  std::unique_ptr<Codec> codec_;
  at::Tensor residual_;
};

}  // namespace atl
