#include "strategy/streaming.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <regex>
#include <stdexcept>

namespace atl {

std::vector<int64_t> assign_fragments(const std::vector<std::string>& names, int64_t tensors, int64_t fragment_blocks,
                                      const std::string& pattern, const std::string& block_pattern,
                                      int64_t* fragments) {
  // Block of each tensor: the pattern's first group, -1 before the first
  // block, n after the last.
  std::vector<int64_t> block(size_t(tensors), -2);
  const std::regex block_name(block_pattern);
  int64_t blocks = 0;
  for (size_t k = 0; k < names.size() && k < size_t(tensors); ++k) {
    std::smatch m;
    if (std::regex_search(names[k], m, block_name)) {
      const std::string index = m.size() > 1 && m[1].matched ? m[1].str() : "";
      if (index.empty() || index.size() > 9 || index.find_first_not_of("0123456789") != std::string::npos)
        throw std::invalid_argument("streaming.block_pattern matched parameter '" + names[k] +
                                    "' but its first group is '" + index + "', not a block number");
      block[k] = std::stoll(index);
      blocks = std::max(blocks, block[k] + 1);
    }
  }
  if (blocks == 0) {  // no transformer blocks: every tensor is a block
    for (int64_t k = 0; k < tensors; ++k) block[size_t(k)] = k;
    blocks = tensors;
  } else {
    bool seen_block = false;
    for (auto& b : block) {
      if (b >= 0)
        seen_block = true;
      else
        b = seen_block ? blocks : -1;
    }
  }
  const int64_t f = std::max<int64_t>(1, (blocks + fragment_blocks - 1) / fragment_blocks);
  *fragments = f;
  std::vector<int64_t> out;
  for (int64_t b : block) {
    if (b < 0)
      out.push_back(0);
    else if (b >= blocks)
      out.push_back(f - 1);
    else
      out.push_back(pattern == "sequential" ? std::min(f - 1, b / fragment_blocks) : b % f);
  }
  return out;
}

namespace {

// theta_g's starting values: a copy of each parameter.
std::vector<at::Tensor> copies_of(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

StreamingDiLoCoStrategy::StreamingDiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                                                 const std::vector<std::string>& names)
    : params_(params),
      comm_(comm),
      inner_(cfg.optim, params, names),
      outer_(cfg.diloco),
      cfg_(cfg.streaming),
      global_(copies_of(params)),
      warmup_(DdpWarmup::of_diloco(cfg, params, comm, inner_, &global_)) {
  at::NoGradGuard no_grad;
  int64_t count = 0;
  const auto which =
      assign_fragments(names, int64_t(params_.size()), cfg_.fragment_blocks, cfg_.pattern, cfg_.block_pattern, &count);
  const int64_t h = outer_.inner_steps;
  if (h % count != 0 || cfg_.overlap >= h / count)
    throw std::invalid_argument("streaming: " + std::to_string(count) + " fragments need diloco.inner_steps (H = " +
                                std::to_string(h) + ") to be a multiple of F and streaming.overlap < H/F");
  fragments_.resize(size_t(count));
  for (int64_t p = 0; p < count; ++p) fragments_[size_t(p)].offset = (p + 1) * (h / count) - 1;
  for (size_t k = 0; k < params_.size(); ++k) {
    fragments_[size_t(which[k])].members.push_back(k);
    momentum_.push_back(at::zeros_like(global_[k]));
  }
  for (auto& f : fragments_) {
    std::vector<int64_t> tensors;  // the fragment's payload concatenates its members (prepare())
    for (size_t k : f.members) tensors.push_back(params_[k].numel());
    f.codec = std::make_unique<PayloadCodec>(cfg_.codec, cfg.codec, tensors);
  }
}

void StreamingDiLoCoStrategy::step(int64_t t, double lr) {
  if (warmup_.step(t, lr)) return;
  inner_.step(lr);
  const int64_t h = outer_.inner_steps;
  if (cfg_.eager) {  // tau = 0 (validate_streaming): one sync, no prepare
    for (size_t p = 0; p < fragments_.size(); ++p) {
      const int64_t due = t - fragments_[p].offset;
      if (due >= 0 && due % h == 0) eager_sync(fragments_[p], p);
    }
    return;
  }
  for (size_t p = 0; p < fragments_.size(); ++p) {
    const int64_t due = t - fragments_[p].offset + cfg_.overlap;
    if (due >= 0 && due % h == 0) prepare(fragments_[p], p);
  }
  for (auto& f : fragments_) {
    const int64_t due = t - f.offset;
    if (due >= 0 && due % h == 0 && f.delta.defined()) perform(f);
  }
}

int64_t StreamingDiLoCoStrategy::next_sync_step(int64_t t) const {
  const int64_t h = outer_.inner_steps;
  int64_t next = -1;
  // A fragment's sync needs its prepare (overlap steps earlier) after the
  // warm-up: step() skips one whose prepare falls inside it.
  const int64_t first = warmup_.steps() + cfg_.overlap;
  for (const auto& f : fragments_) {
    const int64_t from = std::max({t, f.offset, first});
    const int64_t u = f.offset + (from - f.offset + h - 1) / h * h;  // first u >= from with (u - o_p) mod H = 0
    if (next < 0 || u < next) next = u;
  }
  return next;
}

at::Tensor StreamingDiLoCoStrategy::outer_gradient(const Fragment& f) const {
  std::vector<at::Tensor> parts;
  for (size_t k : f.members) parts.push_back((global_[k] - params_[k].detach()).reshape({-1}));
  return parts.empty() ? at::zeros({0}, global_[0].options()) : at::cat(parts);
}

void StreamingDiLoCoStrategy::prepare(Fragment& f, size_t index) {
  at::NoGradGuard no_grad;
  f.delta = outer_gradient(f);
  f.work = mean_all_reduce_async(comm_, *f.codec, f.delta, "fragment/" + std::to_string(index));
}

void StreamingDiLoCoStrategy::perform(Fragment& f) {
  at::NoGradGuard no_grad;
  f.work.wait();
  // Pseudo-gradient, momentum, update and the alpha merge: about 10
  // operations per parameter of the fragment (the modelled clock's charge).
  extra_flops_ += 10.0 * double(f.delta.numel());
  outer_step(f, f.delta);
  f.delta = at::Tensor();
  ++f.syncs;
}

void StreamingDiLoCoStrategy::eager_sync(Fragment& f, size_t index) {
  at::NoGradGuard no_grad;
  const at::Tensor fresh = outer_gradient(f);  // Delta_i^(r)
  const double n = double(comm_.size());
  // (mean_prev - sent / N) + Delta_i / N, in that order: with N = 1 the
  // bracket is exactly 0, so the estimate is Delta_i bit for bit (tau = 0's).
  at::Tensor estimate = fresh.div(n);
  if (f.delta.defined()) {  // the all-reduce started at this fragment's previous sync
    f.work.wait();
    estimate = f.delta.sub(f.sent.div(n)).add_(estimate);
  }
  // As perform()'s 10, plus the estimate's 3 operations per parameter.
  extra_flops_ += 13.0 * double(fresh.numel());
  outer_step(f, estimate);
  // The fresh outer gradient travels while the next H steps run.
  f.delta = fresh;
  f.work = mean_all_reduce_async(comm_, *f.codec, f.delta, "fragment/" + std::to_string(index), &f.sent);
  ++f.syncs;
}

void StreamingDiLoCoStrategy::outer_step(const Fragment& f, const at::Tensor& delta_all) {
  const double mu = outer_.outer_momentum, alpha = cfg_.alpha;
  int64_t offset = 0;
  for (size_t k : f.members) {
    const at::Tensor delta = delta_all.narrow(0, offset, global_[k].numel()).view_as(global_[k]);
    offset += global_[k].numel();
    momentum_[k].mul_(mu).add_(delta);
    const at::Tensor update = outer_.nesterov ? delta.add(momentum_[k], mu) : momentum_[k];
    global_[k].sub_(update, outer_.outer_lr);
    at::Tensor local = params_[k];
    local.copy_(global_[k] * (1.0 - alpha) + local * alpha);
  }
}

std::map<std::string, double> StreamingDiLoCoStrategy::stats() const {
  double syncs = 0;
  for (const auto& f : fragments_) syncs += double(f.syncs);
  return {{"streaming_fragment_syncs", syncs}, {"streaming_fragments", double(fragments_.size())}};
}

void StreamingDiLoCoStrategy::visit_state(StateVisitor& v) {
  inner_.visit_state(v);
  v.tensors("global", global_);
  v.tensors("momentum", momentum_);
  warmup_.visit_state(v);
  for (size_t i = 0; i < fragments_.size(); ++i) {
    Fragment& f = fragments_[i];
    StateVisitor::Scope scope(v, "fragment." + std::to_string(i));
    // The Work first: saving finishes a real backend's transfer into `delta`
    // (and its division by N), so what is saved is the final mean.
    f.work.visit_state(v, "work", comm_);
    v.optional_tensor("delta", f.delta);                // in flight between prepare and perform (eager: between syncs)
    if (cfg_.eager) v.optional_tensor("sent", f.sent);  // only eager runs have it: older checkpoints load as before
    v.integer("syncs", f.syncs);
    f.codec->visit_state(v);
  }
}

}  // namespace atl
