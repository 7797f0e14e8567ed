// Bytes and seconds per communication op (ALGORITHMS.md 7.2).

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "atoll/net.h"
#include "net/collective_algorithms.h"
#include "net/rounds.h"
#include "util/rng.h"

namespace atl {
namespace {

// Uniform in [0, 1) from (seed, op_index); same inputs, same value.
double unit_uniform(uint64_t seed, uint64_t op_index) {
  const uint64_t h = hash64(seed ^ hash64(op_index));
  return static_cast<double>(h >> 11) * 0x1.0p-53;  // 53 random bits
}

}  // namespace

ByteCount bytes_for(CommOp op, CollectiveAlgo algo, double payload, int64_t world, bool is_root) {
  if (world < 1) {
    throw std::invalid_argument("bytes_for: world size must be >= 1, got " + std::to_string(world));
  }
  if (!(payload >= 0)) {
    throw std::invalid_argument("bytes_for: payload must be >= 0 bytes, got " + std::to_string(payload));
  }
  ByteCount c;
  if (world == 1) return c;
  const double n = static_cast<double>(world);
  const double s = payload;
  switch (op) {
    case CommOp::AllReduce:
      c = collective_algorithm(algo).all_reduce_bytes(n, s);
      break;
    case CommOp::AllGather:
      c = collective_algorithm(algo).all_gather_bytes(n, s);
      break;
    case CommOp::Broadcast:
      if (is_root) {
        c.sent = s;
      } else {
        c.received = s;
      }
      break;
    case CommOp::Barrier:
      break;
    case CommOp::Exchange:
      c.sent = c.received = s;
      break;
    case CommOp::Send:
      c.sent = s;
      break;
    case CommOp::Recv:
      c.received = s;
      break;
  }
  return c;
}

NetworkModel::NetworkModel(std::vector<Link> links, CollectiveAlgo algo, double server_bandwidth, double jitter,
                           uint64_t seed)
    : links_(std::move(links)), algo_(algo), server_bandwidth_(server_bandwidth), jitter_(jitter), seed_(seed) {
  if (links_.empty()) throw std::invalid_argument("NetworkModel: need at least one link");
  for (std::size_t i = 0; i < links_.size(); ++i) {
    if (!(links_[i].bandwidth > 0) || !std::isfinite(links_[i].bandwidth)) {
      throw std::invalid_argument("NetworkModel: link " + std::to_string(i) + " bandwidth must be > 0 bytes/s");
    }
    if (!(links_[i].download >= 0) || !std::isfinite(links_[i].download)) {
      throw std::invalid_argument("NetworkModel: link " + std::to_string(i) +
                                  " download bandwidth must be > 0 bytes/s (0 = the upload's)");
    }
    if (!(links_[i].latency >= 0) || !std::isfinite(links_[i].latency)) {
      throw std::invalid_argument("NetworkModel: link " + std::to_string(i) + " latency must be >= 0 s");
    }
  }
  if (std::isnan(server_bandwidth_)) {
    throw std::invalid_argument("NetworkModel: server bandwidth is NaN (use <= 0 for 'same as workers')");
  }
  if (!(jitter_ >= 0) || !std::isfinite(jitter_)) {
    throw std::invalid_argument("NetworkModel: jitter must be >= 0 s");
  }
}

double NetworkModel::op_seconds(CommOp op, double payload, const std::vector<int64_t>& participants,
                                uint64_t op_index) const {
  return op_seconds_for(op, payload, participants, static_cast<int64_t>(participants.size()), op_index);
}

// The rank count n enters only the schedule (ring hops, tree rounds, the
// 2(n-1)/n share); the links of `participants` set beta and alpha. A flat
// ring over the D devices of each of p islands is n = p*D ranks on the
// islands' wide-area links.
double NetworkModel::op_seconds_for(CommOp op, double payload, const std::vector<int64_t>& participants, int64_t n,
                                    uint64_t op_index) const {
  if (!(payload >= 0)) {
    throw std::invalid_argument("NetworkModel::op_seconds: payload must be >= 0 bytes");
  }
  if (n < static_cast<int64_t>(participants.size())) {
    throw std::invalid_argument("NetworkModel::op_seconds_for: n = " + std::to_string(n) + " ranks is fewer than the " +
                                std::to_string(participants.size()) + " participants whose links they use");
  }
  if (n <= 1) return 0.0;
  if (participants.empty()) {
    throw std::invalid_argument("NetworkModel::op_seconds_for: " + std::to_string(n) +
                                " ranks need the participants whose links they use (none given)");
  }

  double up = 0, down = 0;
  double alpha = 0;
  for (std::size_t i = 0; i < participants.size(); ++i) {
    const int64_t r = participants[i];
    if (r < 0 || r >= workers()) {
      throw std::out_of_range("NetworkModel::op_seconds: rank " + std::to_string(r) + " outside 0.." +
                              std::to_string(workers() - 1));
    }
    const Link& l = links_[static_cast<std::size_t>(r)];
    up = i == 0 ? l.bandwidth : std::min(up, l.bandwidth);
    down = i == 0 ? l.down() : std::min(down, l.down());
    alpha = std::max(alpha, l.latency);
  }
  // Every byte goes up one link and down another.
  const double beta = std::min(up, down);

  const double s = payload;
  const double rounds = static_cast<double>(ceil_log2(n));
  AllReduceShape shape;
  shape.n = n;
  shape.payload = s;
  shape.alpha = alpha;
  shape.beta = beta;
  shape.up = up;
  shape.down = down;
  shape.server_bandwidth = server_bandwidth_;
  double t = 0;
  switch (op) {
    case CommOp::AllReduce:
      t = collective_algorithm(algo_).all_reduce_seconds(shape);
      break;
    case CommOp::AllGather:
      t = collective_algorithm(algo_).all_gather_seconds(shape);
      break;
    case CommOp::Broadcast:
      t = rounds * alpha + s / beta;
      break;
    case CommOp::Barrier:
      t = 2.0 * rounds * alpha;
      break;
    case CommOp::Exchange:
    case CommOp::Send:
    case CommOp::Recv:
      t = alpha + s / beta;
      break;
  }
  if (jitter_ > 0) {
    // Rounding could turn jitter * (1 - 2^-53) into jitter; keep it half-open.
    const double extra = std::min(jitter_ * unit_uniform(seed_, op_index), std::nextafter(jitter_, 0.0));
    t += extra;
  }
  return t;
}

NetworkModel NetworkModel::with_bandwidth_scaled(double factor) const {
  if (!(factor > 0) || !std::isfinite(factor))
    throw std::invalid_argument("NetworkModel::with_bandwidth_scaled: factor must be > 0");
  NetworkModel scaled = *this;
  for (Link& l : scaled.links_) {
    l.bandwidth *= factor;
    l.download *= factor;  // 0 (= the upload's) stays 0
  }
  if (scaled.server_bandwidth_ > 0) scaled.server_bandwidth_ *= factor;
  return scaled;
}

double NetworkModel::collective_seconds(CommOp op, double payload, uint64_t op_index) const {
  std::vector<int64_t> all(links_.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return op_seconds(op, payload, all, op_index);
}

}  // namespace atl
