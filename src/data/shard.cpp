// Per-worker shards (iid / non-iid) and random batch samplers.
#include "atoll/data.h"
#include "data/index_shard.h"
#include "util/rng.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace atl {
namespace {

void validate_shard_args(int64_t worker, int64_t workers, const std::string& mode) {
  if (workers < 1) throw std::invalid_argument("workers must be >= 1, got " + std::to_string(workers));
  if (worker < 0 || worker >= workers)
    throw std::invalid_argument("worker must be in 0.." + std::to_string(workers - 1) + ", got " +
                                std::to_string(worker));
  if (mode != "iid" && mode != "noniid")
    throw std::invalid_argument("unknown shard mode '" + mode + "' (allowed: iid, noniid)");
}

}  // namespace

std::vector<TokenRange> shard_ranges(const TokenSplit& split, int64_t worker, int64_t workers, const std::string& mode,
                                     uint64_t seed, int64_t chunk) {
  validate_shard_args(worker, workers, mode);
  if (chunk < 1) throw std::invalid_argument("chunk must be >= 1, got " + std::to_string(chunk));
  const auto n = static_cast<int64_t>(split.tokens.size());
  std::vector<TokenRange> out;
  if (n == 0) return out;

  if (mode == "iid") {
    const int64_t chunks = (n + chunk - 1) / chunk;
    const std::vector<int64_t> perm = seeded_permutation(chunks, seed);
    for (int64_t k = worker; k < chunks; k += workers) {
      const int64_t c = perm[static_cast<size_t>(k)];
      out.push_back({c * chunk, std::min(n, (c + 1) * chunk)});
    }
    std::sort(out.begin(), out.end(), [](const TokenRange& a, const TokenRange& b) { return a.begin < b.begin; });
    std::vector<TokenRange> merged;
    for (const auto& r : out) {
      if (!merged.empty() && merged.back().end == r.begin)
        merged.back().end = r.end;
      else
        merged.push_back(r);
    }
    return merged;
  }

  // noniid: boundaries b_0 = 0 < b_1 < ... < b_N = n. Target i*n/N is snapped
  // to the nearest document start unless that would leave this shard or the
  // next one empty (then the unsnapped target is used).
  const auto& starts = split.doc_starts;
  std::vector<int64_t> bounds(static_cast<size_t>(workers) + 1, 0);
  bounds.back() = n;
  for (int64_t i = 1; i < workers; ++i) {
    const int64_t target = i * n / workers;
    const int64_t next_target = (i + 1) * n / workers;
    const int64_t prev = bounds[static_cast<size_t>(i - 1)];
    int64_t snapped = -1;
    auto it = std::lower_bound(starts.begin(), starts.end(), target);
    if (it != starts.end()) snapped = *it;
    if (it != starts.begin()) {
      const int64_t below_target = *(it - 1);
      if (snapped < 0 || target - below_target <= snapped - target) snapped = below_target;
    }
    const bool ok = snapped > prev && snapped < next_target && snapped < n;
    bounds[static_cast<size_t>(i)] = ok ? snapped : std::max(target, prev);
  }
  const int64_t b = bounds[static_cast<size_t>(worker)];
  const int64_t e = bounds[static_cast<size_t>(worker) + 1];
  if (e > b) out.push_back({b, e});
  return out;
}

TokenBatchSampler::TokenBatchSampler(const TokenSplit& split, std::vector<TokenRange> ranges, int64_t block_size,
                                     uint64_t seed)
    : split_(split), block_size_(block_size), state_(seed) {
  if (block_size < 1) throw std::invalid_argument("block_size must be >= 1, got " + std::to_string(block_size));
  const auto n = static_cast<int64_t>(split.tokens.size());
  int64_t largest = 0;
  int64_t total = 0;
  for (const auto& r : ranges) {
    if (r.begin < 0 || r.end < r.begin || r.end > n)
      throw std::invalid_argument("token range [" + std::to_string(r.begin) + ", " + std::to_string(r.end) +
                                  ") is outside the split of " + std::to_string(n) + " tokens");
    largest = std::max(largest, r.size());
    if (r.size() < block_size + 1) continue;  // cannot hold one window
    ranges_.push_back(r);
    total += r.size() - block_size;  // window starts: size - (block_size + 1) + 1
    cumulative_starts_.push_back(total);
  }
  if (ranges_.empty())
    throw std::invalid_argument(
        "shard too small for block_size: a window needs block_size + 1 = " + std::to_string(block_size + 1) +
        " tokens but the largest range has " + std::to_string(largest) +
        "; use fewer workers, a smaller block_size or a larger "
        "iid chunk");
}

void TokenBatchSampler::next(int64_t batch_size, at::Tensor& x, at::Tensor& y, std::vector<int64_t>* starts) {
  if (batch_size < 1) throw std::invalid_argument("batch_size must be >= 1, got " + std::to_string(batch_size));
  const int64_t t = block_size_;
  x = at::empty({batch_size, t}, at::kLong);  // (B, T)
  y = at::empty({batch_size, t}, at::kLong);  // (B, T)
  int64_t* xp = x.data_ptr<int64_t>();
  int64_t* yp = y.data_ptr<int64_t>();
  const auto total = static_cast<uint64_t>(cumulative_starts_.back());
  const uint16_t* tokens = split_.tokens.data();
  for (int64_t b = 0; b < batch_size; ++b) {
    const auto r = static_cast<int64_t>(splitmix64(state_) % total);
    // First range whose inclusive prefix count exceeds r.
    const auto k = static_cast<size_t>(std::upper_bound(cumulative_starts_.begin(), cumulative_starts_.end(), r) -
                                       cumulative_starts_.begin());
    const int64_t before = k == 0 ? 0 : cumulative_starts_[k - 1];
    const int64_t start = ranges_[k].begin + (r - before);
    if (starts) starts->push_back(start);
    const uint16_t* w = tokens + start;
    for (int64_t i = 0; i < t; ++i) {
      xp[b * t + i] = w[i];
      yp[b * t + i] = w[i + 1];
    }
  }
}

std::vector<std::pair<at::Tensor, at::Tensor>> fixed_token_batches(const TokenSplit& split, int64_t block_size,
                                                                   int64_t batch_size, int64_t count, uint64_t seed,
                                                                   std::vector<int64_t>* starts) {
  if (count < 0) throw std::invalid_argument("batch count must be >= 0, got " + std::to_string(count));
  TokenBatchSampler sampler(split, {TokenRange{0, static_cast<int64_t>(split.tokens.size())}}, block_size, seed);
  std::vector<std::pair<at::Tensor, at::Tensor>> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    at::Tensor x, y;
    sampler.next(batch_size, x, y, starts);
    out.emplace_back(std::move(x), std::move(y));
  }
  return out;
}

int64_t document_of(const TokenSplit& split, int64_t position) {
  const auto& d = split.doc_starts;
  // load_token_data checks that the first start is 0, so every position has one.
  const auto it = std::upper_bound(d.begin(), d.end(), position);
  return it == d.begin() ? 0 : static_cast<int64_t>(it - d.begin()) - 1;
}

std::vector<int64_t> shard_indices(int64_t n, const std::vector<int64_t>& labels, int64_t worker, int64_t workers,
                                   const std::string& mode, uint64_t seed) {
  validate_shard_args(worker, workers, mode);
  if (!labels.empty() && static_cast<int64_t>(labels.size()) != n)
    throw std::invalid_argument("shard_indices: " + std::to_string(labels.size()) + " labels for " + std::to_string(n) +
                                " examples");
  std::vector<int64_t> out;
  if (mode == "iid") {
    const std::vector<int64_t> perm = seeded_permutation(n, seed);
    for (int64_t k = worker; k < n; k += workers) out.push_back(perm[static_cast<size_t>(k)]);
    std::sort(out.begin(), out.end());
    return out;
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!labels.empty()) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return labels[static_cast<size_t>(a)] < labels[static_cast<size_t>(b)];
    });
  }
  const int64_t b = worker * n / workers;
  const int64_t e = (worker + 1) * n / workers;
  out.assign(order.begin() + b, order.begin() + e);
  return out;
}

std::vector<int64_t> mnist_shard(const MnistSplit& split, int64_t worker, int64_t workers, const std::string& mode,
                                 uint64_t seed) {
  return shard_indices(split.size(), std::vector<int64_t>(split.labels.begin(), split.labels.end()), worker, workers,
                       mode, seed);
}

}  // namespace atl
