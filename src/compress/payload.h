// A strategy's communicated payload under its configured codec
// (ddp.codec, diloco.codec, sparta.codec, streaming.codec; [codec] knobs).
//
// Every worker encodes its payload and keeps what the receivers would decode;
// the reduction then runs in full precision on the decoded values, and the
// ledger and network model charge the encoded size (ALGORITHMS.md 8.5, 10).
// An uncompressed codec (fp32) sends the payload as it is, in its own dtype.
//
// Dense codecs (fp16, bf16, int8, fp4) keep the all-reduce: the encoded size
// is what each hop of a ring carries. A real low-precision ring also carries
// the partial sums in that precision, so what every worker receives is a
// quantized result: with codec.requantize_result (the default) the reduced
// mean is encoded and decoded once more with the same codec (requantize()),
// identically on every worker. That is one rounding of the final result, not
// one per hop: the hop-by-hop error depends on the ring's chunk order, which
// the in-process reduction (exact, rank order) does not reproduce; the final
// rounding is the part every ring has. Bytes do not change (the ledger already
// charges every hop at the encoded size).
//
// A sparse codec (topk) cannot keep the all-reduce: different workers keep
// different entries, so a sparse payload is all-gathered as (int32 index,
// fp32 value) pairs and summed in rank order, and the ledger counts what that
// all-gather moves, (N - 1) * S per worker. No reduced result travels, so there is nothing to
// re-quantize: each receiver sums exact fp32 values. A codec with a wire
// format (topk-chunk*, compress/chunk_topk.h) all-gathers its own message
// instead, and each receiver decodes it. (A sparse ring all-reduce
// would see its partial sums densify hop by hop; re-sparsifying them would
// change the algorithm, not model its precision, so we do not.)
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "atoll/config.h"
#include "compress/codec.h"

namespace atl {

class PayloadCodec {
 public:
  // `tensors`: numel of each tensor the flat payload concatenates, in order;
  // sparse codecs (topk, topk-chunk*) with codec.topk_scope = tensor select
  // within each (empty: the payload is one tensor). Other codecs
  // ignore it. feedback_decay: error feedback's beta for a sparse codec with
  // codec.error_feedback (1 = plain error feedback; SparseLoCo 0.95).
  PayloadCodec(const std::string& name, const CodecConfig& cfg, std::vector<int64_t> tensors = {},
               double feedback_decay = 1.0);
  // Replaces the 1-D payload x by its decoded form; returns the encoded bytes.
  double encode(at::Tensor& x);
  // The reduced result x as a low-precision ring delivers it: encoded and
  // decoded once more when codec.requantize_result is on and the codec
  // quantizes (a no-op for fp32 and topk, see above). Deterministic, so every
  // worker gets the same values from the same mean.
  void requantize(at::Tensor& x);
  bool lossless() const { return codec_ == nullptr && feedback_ == nullptr; }
  bool sparse() const { return sparse_; }
  // The last encode()'s message, for a codec with a wire format (else undefined).
  const at::Tensor& wire() const { return wire_; }
  // acc += what a peer's message decodes to (Codec::add_wire).
  void add_wire(const at::Tensor& wire, at::Tensor& acc) const { active().add_wire(wire, acc); }
  const std::string& name() const { return name_; }
  // The bytes of an n-element message by part (the codec table's split).
  BytesByPart parts(int64_t n) const;
  // Checkpoints: the error-feedback residual (the only state a codec keeps).
  void visit_state(StateVisitor& v) {
    if (feedback_) feedback_->visit_state(v);
  }

 private:
  std::string name_;
  CodecSizing sizing_;
  bool sparse_ = false;
  bool requantize_ = false;                  // codec.requantize_result, for a quantizing codec
  std::unique_ptr<Codec> codec_;             // null for fp32 (and a codec inside error feedback)
  std::unique_ptr<ErrorFeedback> feedback_;  // a codec that needs it (CodecInfo::feedback), with codec.error_feedback
  at::Tensor wire_;                          // the last message (codecs with a wire format)
  // The codec itself (inside the error feedback, if any).
  const Codec& active() const { return feedback_ ? feedback_->codec() : *codec_; }
  Codec& active() { return feedback_ ? feedback_->codec() : *codec_; }
};

// x <- mean over workers of every worker's decoded x (blocking), re-quantized
// (see requantize()).
//
// `buckets` (DDP with ddp.overlap): element counts of x's gradient buckets in
// the order the backward pass produces them, summing to x.numel(); the
// all-reduce is then timed bucket by bucket, overlapped with the backward
// pass (Communicator::all_reduce_overlapped); values are the same. Empty, or
// a sparse codec (an all-gather of the whole selection): one all-reduce after
// the compute, as without overlap.
void mean_all_reduce(Communicator& comm, PayloadCodec& codec, at::Tensor& x, const std::string& tag,
                     const std::vector<int64_t>& buckets = {});

// Non-blocking form for dense codecs (the clock is charged at wait(), and
// the re-quantization happens once the data are final); sparse codecs fall
// back to the blocking all-gather and return a finished Work. `sent`, if
// set, receives a copy of this worker's decoded payload: its own share of
// the mean (Streaming DiLoCo's eager updates take it back out).
Work mean_all_reduce_async(Communicator& comm, PayloadCodec& codec, at::Tensor& x, const std::string& tag,
                           at::Tensor* sent = nullptr);

}  // namespace atl
