#include "strategy/topology.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>

#include "util/rng.h"

namespace atl {

std::vector<int64_t> ring_peers(int64_t rank, int64_t n) {
  if (n <= 1) return {};
  const int64_t left = (rank + n - 1) % n, right = (rank + 1) % n;
  if (left == right) return {left};
  return {left, right};
}

std::vector<std::vector<int64_t>> random_groups(int64_t n, int64_t group_size, uint64_t seed, int64_t round) {
  if (group_size < 2) throw std::invalid_argument("random_groups: group size must be >= 2");
  const std::vector<int64_t> perm = seeded_permutation(n, mix_seed(seed, static_cast<uint64_t>(round), 0x6055197));
  std::vector<std::vector<int64_t>> groups;
  for (int64_t start = 0; start < n; start += group_size) {
    const int64_t end = std::min(n, start + group_size);
    groups.emplace_back(perm.begin() + start, perm.begin() + end);
  }
  return groups;
}

Mixer::Mixer(Topology topology, Communicator& comm, uint64_t seed, int64_t group_size)
    : topology_(topology), comm_(comm), seed_(seed), group_size_(group_size) {
  if (topology == Topology::Gossip && group_size < 2)
    throw std::invalid_argument("gossip group size must be >= 2, got " + std::to_string(group_size));
}

std::vector<int64_t> Mixer::peers(int64_t round) const {
  switch (topology_) {
    case Topology::Global:
      return {};
    case Topology::Ring:
      return ring_peers(comm_.rank(), comm_.size());
    case Topology::Gossip:
      for (const auto& g : random_groups(comm_.size(), group_size_, seed_, round)) {
        if (std::find(g.begin(), g.end(), comm_.rank()) == g.end()) continue;
        std::vector<int64_t> others;
        for (int64_t r : g)
          if (r != comm_.rank()) others.push_back(r);
        return others;
      }
  }
  return {};
}

PendingMix Mixer::start(at::Tensor v, int64_t round, const std::string& tag, bool async, double wire_bytes) {
  PendingMix p;
  p.pending_ = true;
  p.target_ = v;
  p.rank_ = comm_.rank();
  if (topology_ == Topology::Global) {
    if (async) {
      p.work_ = comm_.all_reduce_async(v, ReduceOp::Mean, tag, wire_bytes);
    } else {
      comm_.all_reduce(v, ReduceOp::Mean, tag, wire_bytes);
    }
    return p;
  }
  p.peers_ = peers(round);
  p.own_ = v.clone();
  if (async) {
    p.work_ = comm_.exchange_with_async(p.own_, p.received_, p.peers_, tag, wire_bytes);
  } else {
    comm_.exchange_with(p.own_, p.received_, p.peers_, tag, wire_bytes);
  }
  return p;
}

void PendingMix::wait() {
  if (!pending_) return;
  pending_ = false;
  work_.wait();
  mix_received();
}

void PendingMix::visit_state(StateVisitor& v, Communicator& comm, const at::Tensor& target) {
  work_.visit_state(v, "work", comm);  // saving finishes a real backend's transfer first
  if (!v.loading()) mix_received();
  v.flag("pending", pending_);
  if (v.loading()) {
    target_ = target;
    own_ = at::Tensor();
    received_.clear();
    peers_.clear();
    rank_ = comm.rank();
  }
}

void PendingMix::mix_received() {
  if (!own_.defined()) return;  // global: the all-reduce wrote the mean in place
  // Sum in rank order so every member of a group gets bitwise the same mean.
  std::vector<std::pair<int64_t, const at::Tensor*>> members{{rank_, &own_}};
  for (size_t i = 0; i < peers_.size(); ++i) members.emplace_back(peers_[i], &received_[i]);
  std::sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  at::Tensor acc = members[0].second->clone();
  for (size_t i = 1; i < members.size(); ++i) acc.add_(*members[i].second);
  target_.copy_(acc.div_(static_cast<double>(members.size())));
  own_ = at::Tensor();
  received_.clear();
}

}  // namespace atl
