#include "strategy/sparta.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "util/rng.h"

namespace atl {

// ---- index selectors -------------------------------------------------------

namespace {

constexpr uint64_t kSelectorSalt = 0x5ba27a;
constexpr uint64_t kFaultSalt = 0xfa0175;

int64_t parts_for(double p) {
  // 1/0.005 is 199.99999999999997 in binary: round before taking the ceiling.
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(1.0 / p - 1e-9)));
}

// Bernoulli(p) per element, by skipping geometric gaps: cost O(p * n), not O(n).
class RandomSelector : public IndexSelector {
 public:
  RandomSelector(std::vector<int64_t> sizes, uint64_t seed) : sizes_(std::move(sizes)), seed_(seed) {}
  Selection select(int64_t step, int64_t, double p) override {
    Selection s;
    s.begin.push_back(0);
    const double log_q = std::log1p(-p);  // -inf for p = 1: every gap is 0
    for (size_t j = 0; j < sizes_.size(); ++j) {
      if (p > 0) {
        uint64_t state = mix_seed(seed_, static_cast<uint64_t>(step), j);
        for (int64_t pos = -1;;) {
          const double gap = std::floor(std::log1p(-uniform01(state)) / log_q);
          if (!(gap < double(sizes_[j] - pos))) break;  // also ends on NaN/inf
          pos += static_cast<int64_t>(gap) + 1;
          if (pos >= sizes_[j]) break;
          s.index.push_back(pos);
        }
      }
      s.begin.push_back(s.size());
    }
    return s;
  }

 private:
  std::vector<int64_t> sizes_;
  uint64_t seed_;
};

// Per-tensor permutations cut into equal parts; `reshuffle` draws a new
// permutation every cycle (partitioned), otherwise one for ever (sequential).
class PartitionSelector : public IndexSelector {
 public:
  PartitionSelector(std::vector<int64_t> sizes, double p, uint64_t seed, bool reshuffle)
      : sizes_(std::move(sizes)), parts_(parts_for(p)), seed_(seed), reshuffle_(reshuffle) {}
  Selection select(int64_t, int64_t exchange, double) override {
    const int64_t cycle = reshuffle_ ? exchange / parts_ : 0;
    const int64_t part = exchange % parts_;
    if (cycle != cached_cycle_) {
      perms_.clear();
      for (size_t j = 0; j < sizes_.size(); ++j)
        perms_.push_back(seeded_permutation(sizes_[j], mix_seed(seed_, static_cast<uint64_t>(cycle), j)));
      cached_cycle_ = cycle;
    }
    Selection s;
    s.begin.push_back(0);
    for (size_t j = 0; j < sizes_.size(); ++j) {
      const int64_t n = sizes_[j];
      const auto lo = perms_[j].begin() + n * part / parts_, hi = perms_[j].begin() + n * (part + 1) / parts_;
      const size_t first = s.index.size();
      s.index.insert(s.index.end(), lo, hi);
      std::sort(s.index.begin() + static_cast<std::ptrdiff_t>(first), s.index.end());
      s.begin.push_back(s.size());
    }
    return s;
  }

 private:
  std::vector<int64_t> sizes_;
  int64_t parts_;
  uint64_t seed_;
  bool reshuffle_;
  int64_t cached_cycle_ = -1;
  std::vector<std::vector<int64_t>> perms_;
};

// The whole budget on one tensor at a time, tensors in order.
class LayerwiseSelector : public IndexSelector {
 public:
  LayerwiseSelector(std::vector<int64_t> sizes, double p, uint64_t seed) : sizes_(std::move(sizes)), seed_(seed) {
    int64_t total = 0;
    for (int64_t n : sizes_) total += n;
    const int64_t budget = std::max<int64_t>(1, std::llround(p * double(total)));
    for (int64_t n : sizes_) {
      chunks_.push_back(std::max<int64_t>(1, (n + budget - 1) / budget));
      cycle_ += chunks_.back();
    }
  }
  Selection select(int64_t, int64_t exchange, double) override {
    const int64_t cycle = exchange / cycle_;
    int64_t pos = exchange % cycle_;
    size_t j = 0;
    while (pos >= chunks_[j]) pos -= chunks_[j++];
    const int64_t n = sizes_[j];
    if (cycle != cached_cycle_ || int64_t(j) != cached_tensor_) {  // one permutation per tensor visit
      perm_ = seeded_permutation(n, mix_seed(seed_, static_cast<uint64_t>(cycle), j));
      cached_cycle_ = cycle;
      cached_tensor_ = int64_t(j);
    }
    Selection s;
    s.begin.assign(j + 1, 0);
    s.index.assign(perm_.begin() + n * pos / chunks_[j], perm_.begin() + n * (pos + 1) / chunks_[j]);
    std::sort(s.index.begin(), s.index.end());
    s.begin.resize(sizes_.size() + 1, s.size());
    return s;
  }

 private:
  std::vector<int64_t> sizes_;
  uint64_t seed_;
  std::vector<int64_t> chunks_;
  int64_t cycle_ = 0;
  int64_t cached_cycle_ = -1, cached_tensor_ = -1;
  std::vector<int64_t> perm_;
};

void check_params(const std::vector<at::Tensor>& params, const Selection& sel) {
  if (sel.begin.size() != params.size() + 1)
    throw std::invalid_argument("selection covers " + std::to_string(sel.begin.size() - 1) +
                                " tensors, the model has " + std::to_string(params.size()));
}

// Calls fn(values pointer, data pointer of tensor j, indices, count) per tensor.
template <typename F>
void for_each_selected(const std::vector<at::Tensor>& params, const Selection& sel, const at::Tensor& buffer, F&& fn) {
  check_params(params, sel);
  AT_DISPATCH_FLOATING_TYPES(buffer.scalar_type(), "sparta_selected", [&] {
    scalar_t* values = buffer.data_ptr<scalar_t>();
    for (size_t j = 0; j < params.size(); ++j) {
      const at::Tensor& p = params[j];
      if (!p.is_contiguous() || p.scalar_type() != buffer.scalar_type())
        throw std::invalid_argument("SPARTA needs contiguous parameters of one dtype");
      scalar_t* data = p.data_ptr<scalar_t>();
      const int64_t lo = sel.begin[j], hi = sel.begin[j + 1];
      fn(values + lo, data, sel.index.data() + lo, hi - lo);
    }
  });
}

}  // namespace

std::unique_ptr<IndexSelector> make_index_selector(const std::string& kind, std::vector<int64_t> tensor_sizes, double p,
                                                   uint64_t seed) {
  if (kind == "random") return std::make_unique<RandomSelector>(std::move(tensor_sizes), seed);
  if (!(p > 0 && p <= 1)) throw std::invalid_argument("sparta.selector = '" + kind + "' needs 0 < p <= 1");
  if (kind == "partitioned") return std::make_unique<PartitionSelector>(std::move(tensor_sizes), p, seed, true);
  if (kind == "sequential") return std::make_unique<PartitionSelector>(std::move(tensor_sizes), p, seed, false);
  if (kind == "layerwise") return std::make_unique<LayerwiseSelector>(std::move(tensor_sizes), p, seed);
  throw std::invalid_argument("sparta.selector = '" + kind +
                              "': allowed values are random | partitioned | sequential | layerwise");
}

uint64_t sparta_selector_seed(uint64_t run_seed) { return mix_seed(run_seed, kSelectorSalt); }

at::Tensor gather_selected(const std::vector<at::Tensor>& params, const Selection& sel) {
  if (params.empty()) return at::empty({0});
  at::Tensor out = at::empty({sel.size()}, params[0].options().requires_grad(false));
  for_each_selected(params, sel, out, [](auto* values, auto* data, const int64_t* idx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) values[i] = data[idx[i]];
  });
  return out;
}

void scatter_selected(const std::vector<at::Tensor>& params, const Selection& sel, const at::Tensor& values) {
  for_each_selected(params, sel, values.contiguous(), [](auto* v, auto* data, const int64_t* idx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) data[idx[i]] = v[i];
  });
}

void add_selected(const std::vector<at::Tensor>& params, const Selection& sel, const at::Tensor& values) {
  for_each_selected(params, sel, values.contiguous(), [](auto* v, auto* data, const int64_t* idx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) data[idx[i]] += v[i];
  });
}

// ---- the sparse exchange ---------------------------------------------------

SparseAverager::SparseAverager(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm)
    : cfg_(cfg.sparta),
      seed_(static_cast<uint64_t>(cfg.run.seed)),
      steps_(cfg.train.steps),
      warmup_(cfg.optim.warmup_steps),
      params_(std::move(params)),
      mixer_(parse_topology(cfg.strategy.topology), comm, static_cast<uint64_t>(cfg.run.seed)),
      codec_(cfg.sparta.codec, cfg.codec) {
  if (codec_.sparse())
    throw std::invalid_argument(
        "sparta.codec = 'topk' is not supported: the selected entries change every "
        "exchange; use a dense codec (fp16 | bf16 | int8 | fp4)");
  std::vector<int64_t> sizes;
  for (const auto& p : params_) {
    sizes.push_back(p.numel());
    total_params_ += p.numel();
  }
  selector_ = make_index_selector(cfg_.selector, sizes, cfg_.p, sparta_selector_seed(seed_));
}

void SparseAverager::after_step(int64_t t) {
  at::NoGradGuard no_grad;
  if ((t + 1) % cfg_.interval == 0) {
    const int64_t exchange = (t + 1) / cfg_.interval - 1;
    uint64_t coin = mix_seed(seed_, static_cast<uint64_t>(t), kFaultSalt);
    if (cfg_.fault_rate > 0 && uniform01(coin) < cfg_.fault_rate) {
      ++skipped_;  // every rank draws the same coin: the whole exchange is lost
    } else {
      InFlight f;
      f.apply_at = t + cfg_.delay;
      f.selection = selector_->select(t, exchange, sparta_p_at(cfg_, t, steps_, warmup_));
      ++exchanges_;
      selected_ += double(f.selection.size());
      if (f.selection.size() > 0) {  // same size on every rank: all skip together
        f.values = gather_selected(params_, f.selection);
        if (cfg_.apply == "delta") f.sent = f.values.clone();
        const double wire = codec_.encode(f.values);
        f.mix = mixer_.start(f.values, exchange, "sparse", /*async=*/cfg_.delay > 0, codec_.lossless() ? -1 : wire);
        in_flight_.push_back(std::move(f));
      }
    }
  }
  while (!in_flight_.empty() && in_flight_.front().apply_at <= t) {
    apply(in_flight_.front());
    in_flight_.pop_front();
  }
}

void SparseAverager::apply(InFlight& f) {
  f.mix.wait();
  // A global all-reduce delivers a quantized mean (payload.h); gossip and ring
  // neighbours average the decoded values they received themselves.
  if (mixer_.topology() == Topology::Global) codec_.requantize(f.values);
  if (f.sent.defined()) {
    add_selected(params_, f.selection, f.values - f.sent);
  } else {
    scatter_selected(params_, f.selection, f.values);
  }
  ++applied_;
}

std::map<std::string, double> SparseAverager::stats() const {
  return {{"sparta_exchanges", double(exchanges_)},
          {"sparta_skipped", double(skipped_)},
          {"sparta_applied", double(applied_)},
          {"sparta_fraction", exchanges_ > 0 ? selected_ / (double(exchanges_) * double(total_params_)) : 0.0}};
}

void SparseAverager::visit_state(StateVisitor& v) {
  StateVisitor::Scope scope(v, "sparse");
  size_t n = in_flight_.size();
  v.count("in_flight", n, kMinStateEntryBytes);  // entries of its own per item
  if (v.loading()) in_flight_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    InFlight& f = in_flight_[i];
    StateVisitor::Scope entry(v, "in_flight." + std::to_string(i));
    v.integer("apply_at", f.apply_at);
    v.integers("selection.begin", f.selection.begin);
    v.integers("selection.index", f.selection.index);
    // Saving first mixes what has arrived into f.values; loading points the
    // mix at the loaded values.
    if (!v.loading()) f.mix.visit_state(v, mixer_.comm(), f.values);
    v.tensor("values", f.values);
    v.optional_tensor("sent", f.sent);
    if (v.loading()) f.mix.visit_state(v, mixer_.comm(), f.values);
  }
  v.integer("exchanges", exchanges_);
  v.integer("skipped", skipped_);
  v.integer("applied", applied_);
  v.real("selected", selected_);
  codec_.visit_state(v);
}

SpartaStrategy::SpartaStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                               const std::vector<std::string>& names)
    : inner_(cfg.optim, params, names), sparse_(cfg, params, comm) {}

void SpartaStrategy::step(int64_t t, double lr) {
  inner_.step(lr);
  sparse_.after_step(t);
}

SpartaDiLoCoStrategy::SpartaDiLoCoStrategy(const Config& cfg, std::vector<at::Tensor> params, Communicator& comm,
                                           const std::vector<std::string>& names)
    : inner_(cfg.optim, params, names),
      sparse_(cfg, params, comm),
      outer_(cfg.diloco, cfg, params, comm),
      warmup_(DdpWarmup::of_diloco(cfg, params, comm, inner_, outer_.global_params())),
      inner_steps_(cfg.diloco.inner_steps) {}

void SpartaDiLoCoStrategy::step(int64_t t, double lr) {
  if (warmup_.step(t, lr)) return;
  inner_.step(lr);
  sparse_.after_step(t);
  if ((t + 1) % inner_steps_ == 0) outer_.sync(t);
}

void SpartaStrategy::visit_state(StateVisitor& v) {
  inner_.visit_state(v);
  sparse_.visit_state(v);
}

void SpartaDiLoCoStrategy::visit_state(StateVisitor& v) {
  inner_.visit_state(v);
  sparse_.visit_state(v);
  outer_.visit_state(v);
  warmup_.visit_state(v);
}

}  // namespace atl
