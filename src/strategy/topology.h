// Who averages with whom (ALGORITHMS.md 8.6): the global all-reduce, a ring
// (each worker mixes with its two neighbours, weights 1/3), and random-group
// gossip (groups of G from a shared-seed permutation, drawn afresh at every
// exchange: G = 2 is random-pair gossip, NoLoCo's default).
//
// Pairings are computed identically on every rank from (seed, round), so no
// coordination traffic exists. A group's members sum the same values in rank
// order, so they end bitwise identical; ring neighbours do not (a ring only
// mixes, it never makes workers equal).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/comm.h"
#include "strategy/topology_table.h"  // Topology, parse_topology

namespace atl {

// Peers of `rank` in a ring of n (distinct; empty for n = 1; one for n = 2).
std::vector<int64_t> ring_peers(int64_t rank, int64_t n);
// Groups of `group_size` ranks (the last may be smaller) cut from a
// permutation of 0..n-1 seeded with (seed, round). Every rank in exactly one.
std::vector<std::vector<int64_t>> random_groups(int64_t n, int64_t group_size, uint64_t seed, int64_t round);

// An exchange in flight: wait() completes it and leaves the mixed values in
// the tensor passed to Mixer::start.
class PendingMix {
 public:
  PendingMix() = default;
  void wait();
  // Checkpoints: mixes what has arrived into the target now (the data are
  // final; only the clock charge stays pending) and saves or restores the
  // rest. `target` is the tensor the mix writes into (restores the alias).
  void visit_state(StateVisitor& v, Communicator& comm, const at::Tensor& target);

 private:
  void mix_received();
  friend class Mixer;
  bool pending_ = false;
  Work work_;
  at::Tensor target_;                 // mixed in place at wait()
  at::Tensor own_;                    // this rank's values at start (exchange topologies)
  std::vector<at::Tensor> received_;  // peers' values, same order as peers_
  std::vector<int64_t> peers_;
  int64_t rank_ = 0;
};

// Averages one flat buffer per rank over the topology.
class Mixer {
 public:
  // `group_size` is G for gossip (>= 2); ignored by the other topologies.
  Mixer(Topology topology, Communicator& comm, uint64_t seed, int64_t group_size = 2);

  // Starts mixing `v` at exchange number `round`; `v` holds the result after
  // wait(). `async` uses the non-blocking ops (the clock is charged at wait).
  // Every rank calls start with the same round, the same numel and dtype.
  // `wire_bytes` >= 0: v's encoded size, if a codec compressed it.
  PendingMix start(at::Tensor v, int64_t round, const std::string& tag, bool async, double wire_bytes = -1);
  void mix(at::Tensor v, int64_t round, const std::string& tag) {
    start(std::move(v), round, tag, /*async=*/false).wait();
  }
  // The ranks this rank mixes with at `round` (empty for Global: everyone).
  std::vector<int64_t> peers(int64_t round) const;
  Communicator& comm() const { return comm_; }
  Topology topology() const { return topology_; }

 private:
  Topology topology_;
  Communicator& comm_;
  uint64_t seed_;
  int64_t group_size_;
};

}  // namespace atl
