#include "compress/payload.h"

#include <ATen/ATen.h>

#include <cstring>
#include <vector>

namespace atl {

PayloadCodec::PayloadCodec(const std::string& name, const CodecConfig& cfg, std::vector<int64_t> tensors,
                           double feedback_decay)
    : name_(name) {
  CodecSizing& sizing = sizing_;
  sizing.block = cfg.block;
  sizing.topk_density = cfg.topk_density;
  sizing.index_bytes = 4;
  sizing.chunk = cfg.chunk;
  sizing.chunk_topk = cfg.chunk_topk;
  // Sparse codecs select per tensor (the chunked ones: chunks never span two
  // tensors) unless codec.topk_scope = global.
  if (codec_is_uncompressed(name)) return;
  sparse_ = codec_is_sparse(name);
  if (sparse_ && cfg.topk_scope == "tensor") sizing.topk_segments = std::move(tensors);
  auto codec = make_codec(name, sizing);
  requantize_ = cfg.requantize_result && !sparse_;
  if (codec_needs_feedback(name) && cfg.error_feedback) {
    feedback_ = std::make_unique<ErrorFeedback>(std::move(codec), feedback_decay);
  } else {
    codec_ = std::move(codec);
  }
}

BytesByPart PayloadCodec::parts(int64_t n) const {
  const CodecBytes b = codec_encoded_parts(name_, n, sizing_);
  return {b.values, b.indices, b.scales};
}

double PayloadCodec::encode(at::Tensor& x) {
  if (!codec_ && !feedback_) return double(x.numel()) * double(x.element_size());
  Encoded e = feedback_ ? feedback_->round_trip(x) : codec_->round_trip(x);
  x.copy_(e.decoded);
  wire_ = e.wire;
  return e.bytes;
}

void PayloadCodec::requantize(at::Tensor& x) {
  if (!requantize_) return;
  x.copy_(active().round_trip(x).decoded);  // the codec itself, stateless: not through error feedback
}

namespace {

// Sparse payload on the wire: int32 indices then fp32 values, as bytes.
at::Tensor pack_sparse(const at::Tensor& x) {
  const at::Tensor idx = x.nonzero().reshape({-1}).to(at::kInt);
  const at::Tensor val = x.index_select(0, idx.to(at::kLong)).to(at::kFloat).contiguous();
  const int64_t k = idx.numel();
  at::Tensor packed = at::empty({k * 8}, at::kByte);
  std::memcpy(packed.data_ptr<uint8_t>(), idx.data_ptr<int32_t>(), size_t(k) * 4);
  std::memcpy(packed.data_ptr<uint8_t>() + k * 4, val.data_ptr<float>(), size_t(k) * 4);
  return packed;
}

void add_sparse(at::Tensor& acc, const at::Tensor& packed) {
  const int64_t k = packed.numel() / 8;
  at::Tensor idx = at::empty({k}, at::kInt), val = at::empty({k}, at::kFloat);
  std::memcpy(idx.data_ptr<int32_t>(), packed.data_ptr<uint8_t>(), size_t(k) * 4);
  std::memcpy(val.data_ptr<float>(), packed.data_ptr<uint8_t>() + k * 4, size_t(k) * 4);
  acc.index_add_(0, idx.to(at::kLong), val.to(acc.scalar_type()));
}

// mean_all_reduce once x is encoded (`bytes` on the wire).
void mean_of_encoded(Communicator& comm, PayloadCodec& codec, at::Tensor& x, double bytes, const std::string& tag,
                     const std::vector<int64_t>& buckets) {
  const int64_t first_entry = comm.ledger().ops();
  if (!codec.sparse()) {
    const double wire = codec.lossless() ? -1 : bytes;
    if (buckets.empty()) {
      comm.all_reduce(x, ReduceOp::Mean, tag, wire);
    } else {
      comm.all_reduce_overlapped(x, ReduceOp::Mean, tag, buckets, wire);
    }
    comm.ledger().describe_payload(first_entry, codec.parts(x.numel()));
    codec.requantize(x);
    return;
  }
  std::vector<at::Tensor> all;
  const bool own_format = codec.wire().defined();
  comm.all_gather(own_format ? codec.wire() : pack_sparse(x), all, tag);
  comm.ledger().describe_payload(first_entry, codec.parts(x.numel()));
  at::Tensor acc = at::zeros_like(x);
  for (const auto& message : all) {  // rank order: reproducible
    if (own_format) {
      codec.add_wire(message, acc);
    } else {
      add_sparse(acc, message);
    }
  }
  x.copy_(acc.div_(double(comm.size())));
}

}  // namespace

void mean_all_reduce(Communicator& comm, PayloadCodec& codec, at::Tensor& x, const std::string& tag,
                     const std::vector<int64_t>& buckets) {
  const double bytes = codec.encode(x);
  mean_of_encoded(comm, codec, x, bytes, tag, buckets);
}

Work mean_all_reduce_async(Communicator& comm, PayloadCodec& codec, at::Tensor& x, const std::string& tag,
                           at::Tensor* sent) {
  const double bytes = codec.encode(x);
  if (sent != nullptr) *sent = x.clone();
  if (codec.sparse()) {
    mean_of_encoded(comm, codec, x, bytes, tag, {});
    return Work();
  }
  const int64_t first_entry = comm.ledger().ops();
  Work work = comm.all_reduce_async(x, ReduceOp::Mean, tag, codec.lossless() ? -1 : bytes);
  comm.ledger().describe_payload(first_entry, codec.parts(x.numel()));
  // The codec outlives the Work (both belong to the strategy); x shares its storage with the caller's.
  PayloadCodec* c = &codec;
  work.then([c, x]() mutable { c->requantize(x); });
  return work;
}

}  // namespace atl
