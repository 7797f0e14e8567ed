#include "compress/magnitude_select.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>

#include "compress/vector_clones.h"

namespace atl {

namespace {

// Why bit patterns: with the sign bit cleared, an IEEE value's encoding read
// as an unsigned integer orders like its magnitude. +0 and -0 both become 0,
// infinity is the largest non-NaN key and every NaN lies above it, which is
// the selection's "NaN counts as largest". So the k-th largest magnitude is
// found by a radix select on integers: no comparator, no sort of the payload.
template <typename T>
struct Key;
template <>
struct Key<float> {
  using U = uint32_t;
  static constexpr U kInf = 0x7f800000u;
};
template <>
struct Key<double> {
  using U = uint64_t;
  static constexpr U kInf = 0x7ff0000000000000ull;
};

template <typename T, typename U = typename Key<T>::U>
inline U magnitude_key(T v) {
  U bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits & (~U(0) >> 1);
}

// 11-bit digits: 2048 counters (8 KB of int32 per histogram) stay in L1.
constexpr int kDigitBits = 11;
constexpr size_t kBuckets = size_t(1) << kDigitBits;
// Below this many candidates an nth_element on the keys is cheaper than another digit.
constexpr int64_t kFewCandidates = 256;

using Histogram = std::array<int64_t, kBuckets>;

// Histogram of key >> shift over the payload. Four sub-histograms so that a
// run of equal digits does not serialise on one counter; int32 counters
// (L1-sized) are folded into the int64 totals every 2^30 values.
template <typename T>
void top_digit_histogram(const T* in, int64_t n, int shift, Histogram& hist) {
  std::array<std::array<uint32_t, kBuckets>, 4> part;  // 32 KB of stack
  hist.fill(0);
  for (int64_t lo = 0; lo < n; lo += int64_t(1) << 30) {
    const int64_t hi = std::min(n, lo + (int64_t(1) << 30));
    for (auto& p : part) p.fill(0);
    int64_t i = lo;
    for (; i + 4 <= hi; i += 4) {
      ++part[0][magnitude_key(in[i]) >> shift];
      ++part[1][magnitude_key(in[i + 1]) >> shift];
      ++part[2][magnitude_key(in[i + 2]) >> shift];
      ++part[3][magnitude_key(in[i + 3]) >> shift];
    }
    for (; i < hi; ++i) ++part[0][magnitude_key(in[i]) >> shift];
    for (size_t b = 0; b < kBuckets; ++b) hist[b] += int64_t(part[0][b]) + part[1][b] + part[2][b] + part[3][b];
  }
}

// The bucket holding the rank-th largest key (rank 1-based, <= the total) and
// how many keys lie in the buckets above it.
struct Crossing {
  size_t bucket;
  int64_t above;
};
Crossing find_crossing(const Histogram& hist, int64_t rank) {
  int64_t above = 0;
  for (size_t b = kBuckets; b-- > 1;) {
    if (above + hist[b] >= rank) return {b, above};
    above += hist[b];
  }
  return {0, above};
}

// out[i] <- in[i] where lo <= key(in[i]) <= key(inf), else +0. One unsigned
// compare per value (key - lo wraps for key < lo), so the loop vectorises.
ATOLL_VECTOR_CLONES void write_kept_float(const float* in, float* out, int64_t n, uint32_t lo) {
  if (lo > Key<float>::kInf) {  // above infinity: nothing is kept
    std::fill(out, out + n, 0.0f);
    return;
  }
  const uint32_t span = Key<float>::kInf - lo;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits;
    std::memcpy(&bits, in + i, sizeof bits);
    out[i] = (bits & 0x7fffffffu) - lo <= span ? in[i] : 0.0f;
  }
}

void write_kept_double(const double* in, double* out, int64_t n, uint64_t lo) {
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t key = magnitude_key(in[i]);
    out[i] = key >= lo && key <= Key<double>::kInf ? double(static_cast<float>(in[i])) : 0.0;  // fp32 on the wire
  }
}

void write_kept(const float* in, float* out, int64_t n, uint32_t lo) { write_kept_float(in, out, n, lo); }
void write_kept(const double* in, double* out, int64_t n, uint64_t lo) { write_kept_double(in, out, n, lo); }

template <typename T, typename U = typename Key<T>::U>
void keep_largest_impl(const T* in, T* out, int64_t n, int64_t k, std::vector<U>& keys) {
  constexpr U kInf = Key<T>::kInf;
  if (k <= 0) {
    std::fill(out, out + n, T(0));
    return;
  }
  // 1. The top digit over the whole payload.
  int shift = int(8 * sizeof(U)) - 1 - kDigitBits;
  Histogram hist;
  top_digit_histogram(in, n, shift, hist);
  Crossing c = find_crossing(hist, k);
  int64_t greater = c.above;   // keys known to be larger than the k-th
  int64_t rank = k - c.above;  // its rank among the candidates, from the top
  bool maybe_nan = false;      // NaN keys share the top buckets with infinity
  for (size_t b = size_t(kInf >> shift); b < kBuckets; ++b) maybe_nan |= hist[b] > 0;

  // 2. The candidates: keys in the crossing bucket (exactly hist[bucket] of them).
  int64_t m = hist[c.bucket];
  if (keys.size() < size_t(m) + 1) keys.resize(size_t(m) + 1);  // +1: the branch-free store below
  {
    const U prefix = U(c.bucket);
    int64_t j = 0;
    for (int64_t i = 0; i < n; ++i) {
      const U key = magnitude_key(in[i]);
      keys[size_t(j)] = key;
      j += (key >> shift) == prefix;
    }
  }

  // 3. Narrow down digit by digit while there are many candidates.
  while (shift > 0 && m > kFewCandidates) {
    const int d = std::min(kDigitBits, shift);
    shift -= d;
    const U mask = (U(1) << d) - 1;
    hist.fill(0);
    for (int64_t j = 0; j < m; ++j) ++hist[size_t((keys[size_t(j)] >> shift) & mask)];
    c = find_crossing(hist, rank);
    greater += c.above;
    rank -= c.above;
    int64_t w = 0;
    for (int64_t j = 0; j < m; ++j) {
      const U key = keys[size_t(j)];
      keys[size_t(w)] = key;
      w += ((key >> shift) & mask) == U(c.bucket);
    }
    m = w;
  }
  U kth;
  int64_t equal;
  if (shift == 0) {  // every bit decided: the candidates are all the k-th key
    kth = keys[0];
    equal = m;
  } else {
    std::nth_element(keys.begin(), keys.begin() + (rank - 1), keys.begin() + m, std::greater<U>());
    kth = keys[size_t(rank - 1)];
    equal = 0;
    for (int64_t j = 0; j < m; ++j) {
      equal += keys[size_t(j)] == kth;
      greater += keys[size_t(j)] > kth;
    }
  }

  // 4. The keep rule (see the header): nothing when the k-th is NaN; the
  // slots left after the non-NaN larger ones go to the first ties.
  if (kth > kInf) {
    std::fill(out, out + n, T(0));
    return;
  }
  int64_t nan = 0;
  if (maybe_nan)
    for (int64_t i = 0; i < n; ++i) nan += magnitude_key(in[i]) > kInf;
  const int64_t ties = std::min(equal, k - (greater - nan));
  int64_t cutoff = n;  // before it ties are kept, from it on only larger keys
  if (ties < equal) {
    int64_t seen = 0;
    for (int64_t i = 0; i < n; ++i)
      if (magnitude_key(in[i]) == kth && ++seen == ties) {
        cutoff = i + 1;
        break;
      }
  }
  write_kept(in, out, cutoff, kth);
  write_kept(in + cutoff, out + cutoff, n - cutoff, U(kth + 1));
}

}  // namespace

void MagnitudeSelect::keep_largest(const float* in, float* out, int64_t n, int64_t k) {
  keep_largest_impl(in, out, n, std::min(k, n), keys32_);
}

void MagnitudeSelect::keep_largest(const double* in, double* out, int64_t n, int64_t k) {
  keep_largest_impl(in, out, n, std::min(k, n), keys64_);
}

}  // namespace atl
