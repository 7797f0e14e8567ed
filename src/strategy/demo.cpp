#include "strategy/demo.h"

#include "strategy/inner_optimizer.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace atl {

namespace {

// Values travel as float32 whatever the parameter dtype (the reference sends
// the parameter dtype, float32 for the OLMo runs): the float64 test harness
// pays 4 bytes per value like a float32 model does.
constexpr int64_t kValueBytes = 4;

void put(uint8_t* dst, const at::Tensor& src) { std::memcpy(dst, src.data_ptr(), src.nbytes()); }

// memcpy, not a dtype view of the buffer: offsets need not be aligned for int64.
at::Tensor take(const uint8_t* src, at::IntArrayRef shape, at::ScalarType dtype) {
  at::Tensor t = at::empty(shape, at::TensorOptions(dtype));
  std::memcpy(t.data_ptr(), src, t.nbytes());
  return t;
}

// dst (zeros, in `layout`) <- the float32 values at their (block, index).
void scatter_sent(at::Tensor& dst, const CoefficientLayout& layout, const at::Tensor& index, const at::Tensor& values) {
  const int64_t blocks = index.size(0), k = index.size(1);
  const int64_t* ip = index.data_ptr<int64_t>();
  const float* vp = values.data_ptr<float>();
  AT_DISPATCH_FLOATING_TYPES(dst.scalar_type(), "demo_sent", [&] {
    scalar_t* out = dst.data_ptr<scalar_t>();
    for (int64_t b = 0; b < blocks; ++b)
      for (int64_t j = 0; j < k; ++j) out[layout.offset(b, ip[b * k + j])] = static_cast<scalar_t>(vp[b * k + j]);
  });
}

}  // namespace

DemoStrategy::DemoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm)
    : cfg_(cfg.demo), grad_clip_(cfg.optim.grad_clip), params_(std::move(params)), comm_(comm) {
  if (cfg_.index_dtype != "int16" && cfg_.index_dtype != "int64")
    throw std::invalid_argument("demo.index_dtype = '" + cfg_.index_dtype + "': allowed values are int16 | int64");
  index_dtype_ = cfg_.index_dtype == "int16" ? at::kShort : at::kLong;
  const int64_t index_bytes = cfg_.index_dtype == "int16" ? 2 : 8;
  at::NoGradGuard no_grad;
  for (const auto& p : params_) {
    Plan plan{BlockDct(p.sizes(), cfg_.chunk), 0, 0, 0};
    const int64_t blocks = plan.dct.blocks(), block_size = plan.dct.block_size();
    if (index_bytes == 2 && block_size > (int64_t(1) << 15))
      throw std::invalid_argument("demo.index_dtype = 'int16' cannot index a DCT block of " +
                                  std::to_string(block_size) + " entries: lower demo.chunk or use int64");
    plan.k = std::min(cfg_.topk, block_size);
    plan.value_offset = payload_bytes_;
    plan.index_offset = payload_bytes_ + blocks * plan.k * kValueBytes;
    payload_bytes_ = plan.index_offset + blocks * plan.k * index_bytes;
    index_bytes_ += blocks * plan.k * index_bytes;
    coefficients_ += blocks * plan.k;
    total_params_ += p.numel();
    plans_.push_back(std::move(plan));
    momentum_.push_back(at::zeros(p.sizes(), p.options()));
  }
  send_ = at::empty({payload_bytes_}, at::kByte);
}

void DemoStrategy::visit_state(StateVisitor& v) { v.tensors("momentum", momentum_); }

void DemoStrategy::step(int64_t, double lr) {
  at::NoGradGuard no_grad;
  clip_gradients(params_, grad_clip_);

  // Compress: each tensor's momentum gives up its top-k DCT coefficients.
  uint8_t* wire = send_.data_ptr<uint8_t>();
  for (size_t j = 0; j < params_.size(); ++j) {
    at::Tensor w = params_[j];
    at::Tensor& m = momentum_[j];
    const Plan& plan = plans_[j];
    if (cfg_.weight_decay > 0) w.mul_(1.0 - lr * cfg_.weight_decay);
    m.mul_(cfg_.beta);
    // A missing gradient counts as zero: every rank must send the same layout.
    if (w.grad().defined()) m.add_(w.grad(), lr);
    // Charged work: the encode, the decode of what was sent, the decode of
    // the mean below (three transforms) and ~10 element-wise operations
    // (momentum, error feedback, top-k pass, scatter, update).
    extra_flops_ += 3 * plan.dct.transform_flops() + 10.0 * double(w.numel());
    // Coefficients stay in the tensor's own layout (compress/dct.h): no copy
    // into block order and back around the three transforms.
    const CoefficientLayout layout = plan.dct.row_layout();
    at::Tensor coefficients = plan.dct.encode_rows(m);
    const BlockTopK top = block_topk(coefficients, layout, plan.dct.blocks(), plan.dct.block_size(), plan.k);
    // Round to the wire's float32 before the error feedback, so the rounding
    // error stays in m and what leaves m is exactly what the others receive.
    const at::Tensor values = top.value.to(at::kFloat).contiguous();
    // What was sent, written over the coefficients (no longer needed).
    coefficients.zero_();
    scatter_sent(coefficients, layout, top.index, values);
    if (m.is_contiguous()) {
      plan.dct.subtract_decoded(coefficients, m);
    } else {
      m.sub_(plan.dct.decode_rows(coefficients));
    }
    put(wire + plan.value_offset, values);
    put(wire + plan.index_offset, top.index.to(index_dtype_).contiguous());
  }

  std::vector<at::Tensor> gathered;
  const int64_t first_entry = comm_.ledger().ops();
  comm_.all_gather(send_, gathered, "demo");
  comm_.ledger().describe_payload(first_entry,
                                  BytesByPart{double(payload_bytes_ - index_bytes_), double(index_bytes_), 0.0});
  for (size_t r = 0; r < gathered.size(); ++r)
    if (gathered[r].numel() != payload_bytes_)
      throw std::runtime_error("DeMo: rank " + std::to_string(r) + " sent " + std::to_string(gathered[r].numel()) +
                               " bytes, this rank expects " + std::to_string(payload_bytes_) +
                               ": the ranks' models differ");

  // Decode every worker's coefficients in rank order (own included, as received),
  // so all ranks compute bitwise the same step and the replicas stay identical.
  for (size_t j = 0; j < params_.size(); ++j) {
    at::Tensor w = params_[j];
    const Plan& plan = plans_[j];
    const std::vector<int64_t> shape = {plan.dct.blocks(), plan.k};
    std::vector<BlockTopK> from(gathered.size());
    for (size_t r = 0; r < gathered.size(); ++r) {
      const uint8_t* buffer = gathered[r].data_ptr<uint8_t>();
      from[r].value = take(buffer + plan.value_offset, shape, at::kFloat).to(w.scalar_type());
      from[r].index = take(buffer + plan.index_offset, shape, index_dtype_).to(at::kLong);
    }
    const at::Tensor d =
        plan.dct.decode_rows(scatter_mean(from, plan.dct.row_layout(), plan.dct.blocks(), plan.dct.block_size()));
    if (cfg_.sign) {
      w.sub_(d.sign(), lr);
    } else {
      w.sub_(d, lr);
    }
    if (w.grad().defined()) w.mutable_grad().zero_();
  }
}

double DemoStrategy::take_extra_flops() {
  const double f = extra_flops_;
  extra_flops_ = 0;
  return f;
}

std::map<std::string, double> DemoStrategy::stats() const {
  return {{"demo_payload_bytes", double(payload_bytes_)},
          {"demo_coefficients", double(coefficients_)},
          {"demo_bytes_per_param", total_params_ > 0 ? double(payload_bytes_) / double(total_params_) : 0.0}};
}

}  // namespace atl
