// Seeded randomness shared by every area: splitmix64, seed mixing and
// seeded permutations. The same numbers on every rank and platform, so draws
// all workers must agree on (SPARTA masks, gossip pairings, shards) need no
// communication, and runs are bitwise reproducible.
//
// Thread-safety: pure functions of their arguments (the state is the caller's).
#pragma once

#include <cstdint>
#include <vector>

namespace atl {

// splitmix64 (Steele, Lea & Flood 2014): advances `state` and returns the
// next 64 random bits.
uint64_t splitmix64(uint64_t& state);
// One splitmix64 draw from `x` as the state, without keeping it: a cheap,
// well-mixed 64-bit hash.
inline uint64_t hash64(uint64_t x) { return splitmix64(x); }
// Mixes several values into one seed (for (run seed, worker, step) tuples).
uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c = 0);
// Uniform double in [0, 1) from one splitmix64 draw (53 random bits).
inline double uniform01(uint64_t& state) { return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53; }
// Uniform integer in [0, bound). Modulo bias is < bound / 2^64: negligible,
// and unlike rejection sampling it consumes exactly one draw per call.
inline uint64_t uniform_below(uint64_t& state, uint64_t bound) { return splitmix64(state) % bound; }
// Fisher-Yates permutation of 0..n-1 driven by splitmix64(seed): the same on
// every rank and platform (shards, SPARTA partitions, gossip pairings).
std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed);

}  // namespace atl
