// A strategy's communicated payload under its configured codec
// (ddp.codec, diloco.codec, sparta.codec, streaming.codec; [codec] knobs).
//
// Every worker encodes its payload and keeps what the receivers would decode;
// the reduction then runs in full precision on the decoded values, and the
// ledger and network model charge the encoded size (ALGORITHMS.md 8.5, 10).
// "fp32" means uncompressed: the payload travels in its own dtype.
//
// Dense codecs (fp16, bf16, int8, fp4) keep the all-reduce: the encoded size
// is what each hop of a ring carries. topk cannot: different workers keep
// different entries, so a sparse payload is all-gathered as (int32 index,
// fp32 value) pairs and summed in rank order, and the ledger counts what that
// all-gather moves, (N - 1) * S per worker.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

#include "atoll/comm.h"
#include "atoll/config.h"
#include "compress/codec.h"

namespace atl {

class PayloadCodec {
 public:
  PayloadCodec(const std::string& name, const CodecConfig& cfg);
  // Replaces the 1-D payload x by its decoded form; returns the encoded bytes.
  double encode(at::Tensor& x);
  bool lossless() const { return codec_ == nullptr; }
  bool sparse() const { return sparse_; }
  const std::string& name() const { return name_; }
  // Checkpoints: the error-feedback residual (the only state a codec keeps).
  void visit_state(StateVisitor& v) {
    if (feedback_) feedback_->visit_state(v);
  }

 private:
  std::string name_;
  bool sparse_ = false;
  std::unique_ptr<Codec> codec_;                 // null for fp32
  std::unique_ptr<ErrorFeedback> feedback_;      // topk with codec.error_feedback
};

// x <- mean over workers of every worker's decoded x (blocking).
void mean_all_reduce(Communicator& comm, PayloadCodec& codec, at::Tensor& x, const std::string& tag);

// Non-blocking form for dense codecs (the clock is charged at wait()); sparse
// codecs fall back to the blocking all-gather and return a finished Work.
Work mean_all_reduce_async(Communicator& comm, PayloadCodec& codec, at::Tensor& x, const std::string& tag);

}  // namespace atl
