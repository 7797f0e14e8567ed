// The top-k codec's selection: keep the k entries of largest |x|, without
// sorting the payload.
//
// The rule (the one the codec has always had, tested against a sort of all
// magnitudes): let t be the k-th largest |x| with NaN counted as larger than
// everything. Entries with |x| > t are kept, NaN never is, and the remaining
// k - (count of non-NaN |x| > t) slots go to the lowest indices with |x| == t.
// When t itself is NaN nothing is kept. Kept values are rounded to float32
// (the wire) and written in the payload's dtype; every other entry is +0.
#pragma once

#include <cstdint>
#include <vector>

namespace atl {

class MagnitudeSelect {
 public:
  // out[0, n) <- the kept entries of in[0, n) (rounded to float32), +0 elsewhere.
  // 0 <= k <= n; in and out must not overlap.
  void keep_largest(const float* in, float* out, int64_t n, int64_t k);
  void keep_largest(const double* in, double* out, int64_t n, int64_t k);

 private:
  // Candidate keys of the bucket holding the k-th largest, kept between calls
  // so a worker's codec allocates only when a payload needs more room.
  std::vector<uint32_t> keys32_;
  std::vector<uint64_t> keys64_;
};

}  // namespace atl
