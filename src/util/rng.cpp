// splitmix64, seed mixing and seeded permutations.
#include "util/rng.h"

#include <cstddef>
#include <numeric>
#include <utility>

namespace atl {

uint64_t splitmix64(uint64_t& state) {
  // Steele, Lea & Flood (2014); the constants of the reference implementation.
  state += 0x9e3779b97f4a7c15ULL;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c) {
  // Chain: each step is a bijection of the previous hash xor the next input,
  // so for fixed earlier inputs distinct later inputs give distinct seeds.
  uint64_t s = a ^ 0x61746f6c6c5f7365ULL;  // "atoll_se": separates these seeds from raw splitmix64(a)
  uint64_t h = splitmix64(s);
  s = h ^ b;
  h = splitmix64(s);
  s = h ^ c;
  return splitmix64(s);
}

std::vector<int64_t> seeded_permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  uint64_t state = seed;
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(uniform_below(state, static_cast<uint64_t>(i) + 1));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

}  // namespace atl
