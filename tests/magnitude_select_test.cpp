// The top-k codec's selection (compress/magnitude_select.h) against its
// definition computed the slow way: sort every magnitude of a segment, read
// the k-th largest, apply the keep rule. Random payloads are built to hit the
// corners: many ties, NaN (also as the k-th largest), infinities, +0 and -0,
// subnormals, runs of values one ulp apart (the selection's deeper digits),
// k = 1 and k = n, several segments, float32 and float64.
#include "compress/codec.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tensor_util.h"

namespace atl {
namespace {

// The codec's k for a segment (k_for in codec.cpp).
int64_t k_for(double density, int64_t n) {
  return n == 0 ? 0 : std::clamp<int64_t>(std::llround(density * double(n)), 1, n);
}

// The definition: t = the k-th largest |x| with NaN above everything; keep
// non-NaN |x| > t and the first k - #{|x| > t} entries with |x| == t; none if
// t is NaN; kept values rounded to float32, +0 elsewhere.
template <typename T>
void sort_all_reference(const T* in, T* out, int64_t n, int64_t k) {
  std::fill(out, out + n, T(0));
  if (k == 0) return;
  std::vector<double> mag(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) mag[size_t(i)] = std::fabs(double(in[i]));
  std::vector<double> sorted = mag;
  std::sort(sorted.begin(), sorted.end(),
            [](double a, double b) { return (!std::isnan(a) && std::isnan(b)) || a < b; });
  const double t = sorted[size_t(n - k)];
  if (std::isnan(t)) return;
  int64_t above = 0;
  for (double m : mag) above += m > t;
  int64_t ties = k - above;
  for (int64_t i = 0; i < n; ++i)
    if (mag[size_t(i)] > t || (mag[size_t(i)] == t && ties-- > 0)) out[i] = static_cast<T>(static_cast<float>(in[i]));
}

// One random payload; `mix` picks how it is built.
template <typename T>
std::vector<T> payload(std::mt19937_64& rng, int64_t n, int mix) {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const T specials[] = {T(0),
                        -T(0),
                        T(1),
                        T(-1),
                        T(2),
                        T(-2),
                        T(0.5),
                        inf,
                        -inf,
                        nan,
                        -nan,
                        std::numeric_limits<T>::denorm_min(),
                        -std::numeric_limits<T>::denorm_min(),
                        std::numeric_limits<T>::max()};
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> pick(0, int(std::size(specials)) - 1), ulps(0, 40);
  std::uniform_real_distribution<double> u;
  std::vector<T> x(static_cast<size_t>(n));
  for (T& v : x) {
    const double r = u(rng);
    switch (mix) {
      case 0:  // mostly ties among a few values and the specials
        v = r < 0.8 ? specials[pick(rng)] : T(normal(rng));
        break;
      case 1:  // mostly distinct, a sprinkle of specials
        v = r < 0.05 ? specials[pick(rng)] : T(normal(rng));
        break;
      case 2: {  // runs one ulp apart: the crossing bucket holds most of the payload
        T w = T(1.5);
        for (int s = ulps(rng); s > 0; --s) w = std::nextafter(w, T(2));
        v = r < 0.5 ? w : -w;
        break;
      }
      default:  // NaN-heavy: the k-th largest is often NaN
        v = r < 0.6 ? (r < 0.3 ? nan : -nan) : T(normal(rng));
    }
  }
  return x;
}

template <typename T>
void check_against_sorting(at::ScalarType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> segment_count(1, 5), mix(0, 3);
  const double densities[] = {1e-9 /* k = 1 */, 0.01, 0.3, 0.5, 1.0 /* k = n */};
  // One whole-payload codec per density for all trials: the scratch it keeps
  // between calls (sized by the previous payloads) must not change a result.
  std::vector<std::unique_ptr<Codec>> whole;
  for (double density : densities) whole.push_back(make_codec("topk", 128, density));
  for (int trial = 0; trial < 120; ++trial) {
    // Mostly small payloads; every tenth large enough for the digit-by-digit narrowing.
    const int64_t max_len = trial % 10 == 0 ? 60000 : 700;
    std::uniform_int_distribution<int64_t> length(0, max_len);
    std::vector<int64_t> segments(static_cast<size_t>(segment_count(rng)));
    for (int64_t& len : segments) len = length(rng);
    int64_t n = 0;
    for (int64_t len : segments) n += len;
    if (n == 0) continue;
    const int m = mix(rng);
    const std::vector<T> x = payload<T>(rng, n, m);
    const at::Tensor xt = at::from_blob(const_cast<T*>(x.data()), {n}, dtype).clone();
    for (size_t d = 0; d < std::size(densities); ++d) {
      const double density = densities[d];
      at::Tensor want = at::empty_like(xt);
      int64_t lo = 0;
      for (int64_t len : segments) {
        sort_all_reference(x.data() + lo, want.data_ptr<T>() + lo, len, k_for(density, len));
        lo += len;
      }
      const at::Tensor got = make_codec("topk", 128, density, 4, segments)->round_trip(xt).decoded;
      ASSERT_TRUE(testing::bitwise_equal(got, want)) << "seed " << seed << " trial " << trial << " mix " << m
                                                     << " density " << density << " segments " << segments.size();
      sort_all_reference(x.data(), want.data_ptr<T>(), n, k_for(density, n));
      ASSERT_TRUE(testing::bitwise_equal(whole[d]->round_trip(xt).decoded, want))
          << "seed " << seed << " trial " << trial << " mix " << m << " density " << density << " n " << n;
    }
  }
}

TEST(CodecTopK, KeepsBitwiseWhatSortingAllMagnitudesKeepsWithTiesNanInfAndSignedZeros) {
  check_against_sorting<float>(at::kFloat, 1);
  check_against_sorting<double>(at::kDouble, 2);
}

}  // namespace
}  // namespace atl
