#include "util/stats.h"

#include <algorithm>
#include <boost/math/distributions/students_t.hpp>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace atl {

double student_t_quantile(double confidence, double df) {
  if (!(confidence > 0 && confidence < 1)) throw std::invalid_argument("confidence must be in (0, 1)");
  if (!(df >= 1)) throw std::invalid_argument("Student t needs df >= 1");
  const boost::math::students_t dist(df);
  return boost::math::quantile(boost::math::complement(dist, (1 - confidence) / 2));
}

bool MeanInterval::has_interval() const { return std::isfinite(half_width); }

MeanInterval mean_interval(const std::vector<double>& values, double confidence) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  MeanInterval m;
  m.n = static_cast<int>(values.size());
  m.half_width = nan;
  m.sd = nan;
  if (values.empty()) {
    m.mean = nan;
    return m;
  }
  double sum = 0;
  bool finite = true;
  for (double v : values) {
    sum += v;
    finite = finite && std::isfinite(v);
  }
  m.mean = sum / m.n;
  if (!finite || m.n < 2) return m;
  double squares = 0;
  for (double v : values) squares += (v - m.mean) * (v - m.mean);
  m.sd = std::sqrt(squares / (m.n - 1));
  m.half_width = student_t_quantile(confidence, m.n - 1) * m.sd / std::sqrt(double(m.n));
  return m;
}

Sign interval_sign(const std::vector<double>& differences, double confidence) {
  const MeanInterval m = mean_interval(differences, confidence);
  if (m.has_interval()) {
    if (m.high() < 0) return Sign::Below;
    if (m.low() > 0) return Sign::Above;
    return Sign::Straddles;
  }
  // No interval. A run that never reached a target gives an infinite
  // difference: when every seed's difference is infinite with one sign (one
  // side reached it and the other never did, in every seed, >= 2 seeds)
  // the claim is decided by an unbounded margin; anything else is Unknown.
  if (differences.size() < 2) return Sign::Unknown;
  bool all_below = true, all_above = true;
  for (double d : differences) {
    all_below = all_below && std::isinf(d) && d < 0;
    all_above = all_above && std::isinf(d) && d > 0;
  }
  return all_below ? Sign::Below : all_above ? Sign::Above : Sign::Unknown;
}

double paired_t_p_value(const MeanInterval& d) {
  if (!d.has_interval() || d.n < 2 || !std::isfinite(d.sd)) return std::numeric_limits<double>::quiet_NaN();
  if (d.sd == 0) return d.mean == 0 ? 1.0 : 0.0;
  const double t = std::fabs(d.mean) / (d.sd / std::sqrt(double(d.n)));
  const boost::math::students_t dist(d.n - 1);
  return std::min(1.0, 2 * boost::math::cdf(boost::math::complement(dist, t)));
}

std::vector<bool> holm_rejected(const std::vector<double>& p_values, double alpha) {
  const size_t m = p_values.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  // NaN sorts last: it is never rejected and stops the procedure.
  auto key = [&](size_t i) { return std::isnan(p_values[i]) ? 2.0 : p_values[i]; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
  std::vector<bool> rejected(m, false);
  for (size_t rank = 0; rank < m; ++rank) {
    const double p = p_values[order[rank]];
    if (!(p <= alpha / double(m - rank))) break;
    rejected[order[rank]] = true;
  }
  return rejected;
}

std::string format_mean_interval(const MeanInterval& m, int digits) {
  char buf[96];
  // Figures every seed gives alike (bytes, modelled times) show no "± 0",
  // nor does an interval narrower than the last digit printed ("61.8 ±
  // 0.0" says no more than "61.8"): half a unit of it would round to 0.
  if (m.has_interval() && m.half_width > 0 && m.half_width >= 0.5 * std::pow(10.0, -digits))
    std::snprintf(buf, sizeof buf, "%.*f ± %.*f", digits, m.mean, digits, m.half_width);
  else
    std::snprintf(buf, sizeof buf, "%.*f", digits, m.mean);
  return buf;
}

}  // namespace atl
