// Rounds of a tree schedule, shared by the flat network model and the
// islands' intra-island terms so both count lg(n) the same way.
#pragma once

#include <cstdint>

namespace atl {

// ceil(log2 n) for n >= 1 (0 for n <= 1): rounds of a tree / recursive-doubling schedule.
inline int64_t ceil_log2(int64_t n) {
  int64_t rounds = 0;
  int64_t reach = 1;
  while (reach < n) {
    reach *= 2;
    ++rounds;
  }
  return rounds;
}

}  // namespace atl
