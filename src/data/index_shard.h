// Per-worker shards of example indices, shared by the MNIST and the npy data
// sets (both hold whole examples rather than a token stream).
// Thread-safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atl {

// Indices into 0..n-1 for worker `worker` of `workers`, sorted:
//   iid:    a permutation of 0..n-1 seeded by `seed`, dealt round-robin;
//   noniid: 0..n-1 stably sorted by `labels` (one per example; empty = keep
//           file order), cut into `workers` contiguous parts of n/N (rounded).
// Validates worker, workers and mode (std::invalid_argument).
std::vector<int64_t> shard_indices(int64_t n, const std::vector<int64_t>& labels, int64_t worker, int64_t workers,
                                   const std::string& mode, uint64_t seed);

}  // namespace atl
