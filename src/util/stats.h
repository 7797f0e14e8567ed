// Small-sample statistics for verdicts over seeds (ALGORITHMS.md section 9,
// "How a verdict is decided"): the mean of K values with its Student-t
// confidence interval, and the sign of a paired difference's interval.
#pragma once

#include <string>
#include <vector>

namespace atl {

// The two-sided quantile t_{1 - (1 - confidence)/2, df} (df >= 1).
double student_t_quantile(double confidence, double df);

// Mean of `values` with the half-width of its `confidence` interval
// (Student t with n - 1 degrees of freedom: t * sd / sqrt(n)). With fewer than
// two finite values, or any value not finite, half_width is NaN: there is no
// interval (the mean is still given when all values are finite).
struct MeanInterval {
  double mean = 0;
  double half_width = 0;  // NaN when there is no interval
  double sd = 0;          // sample standard deviation (n - 1); NaN for n < 2
  int n = 0;
  double low() const { return mean - half_width; }
  double high() const { return mean + half_width; }
  bool has_interval() const;
};
MeanInterval mean_interval(const std::vector<double>& values, double confidence = 0.95);

// Where a claimed difference stands: its interval below zero, above zero,
// or across it (or no interval at all).
enum class Sign { Below, Above, Straddles, Unknown };
// The interval of the mean of `differences` (paired: one per seed) against 0.
// Without an interval (one seed, or a non-finite difference) it is Unknown,
// except when every difference is infinite with the same sign over >= 2
// seeds (a target reached by one side and never by the other, every time).
Sign interval_sign(const std::vector<double>& differences, double confidence = 0.95);

// The two-sided p-value of the paired t test that the mean of the
// differences summarised by `d` is 0 (Student t with n - 1 degrees of
// freedom, from Boost.Math). Without an interval (n < 2, non-finite values)
// it is NaN; with no spread (sd 0) it is 0 for a non-zero mean and 1 for a
// zero one: every seed gave the same difference.
double paired_t_p_value(const MeanInterval& d);

// Holm's step-down procedure over m p-values: which hypotheses are rejected
// with the family-wise error held to `alpha`. Sorted ascending, p_(i) is
// rejected while p_(i) <= alpha / (m - i + 1); the first that is not stops
// it. A NaN p-value is never rejected (and counts in m).
std::vector<bool> holm_rejected(const std::vector<double>& p_values, double alpha = 0.05);

// "1.6512 ± 0.0031" with `digits` decimals ("1.6512" without an interval,
// when every value was the same, or when the interval would print as 0).
std::string format_mean_interval(const MeanInterval& m, int digits);

}  // namespace atl
