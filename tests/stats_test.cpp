// Student-t intervals and the paired verdict rule (util/stats.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "util/stats.h"

namespace atl {
namespace {

TEST(StudentT, QuantilesMatchTheTables) {
  // t_{0.975} from any statistics table: df 1, 2, 9, 30.
  EXPECT_NEAR(student_t_quantile(0.95, 1), 12.7062, 1e-4);
  EXPECT_NEAR(student_t_quantile(0.95, 2), 4.30265, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.95, 9), 2.26216, 1e-5);
  EXPECT_NEAR(student_t_quantile(0.95, 30), 2.04227, 1e-5);
  EXPECT_THROW(student_t_quantile(0.95, 0), std::invalid_argument);
  EXPECT_THROW(student_t_quantile(1.0, 3), std::invalid_argument);
}

TEST(MeanInterval, IsTheMeanPlusMinusTTimesTheStandardError) {
  // {1, 2, 3}: mean 2, sd 1, standard error 1/sqrt(3), df 2.
  const MeanInterval m = mean_interval({1, 2, 3});
  EXPECT_DOUBLE_EQ(m.mean, 2);
  EXPECT_DOUBLE_EQ(m.sd, 1);
  EXPECT_NEAR(m.half_width, 4.302653 / std::sqrt(3.0), 1e-6);
  EXPECT_EQ(m.n, 3);
  EXPECT_EQ(format_mean_interval(m, 3), "2.000 ± 2.484");
}

TEST(MeanInterval, OneValueOrANonFiniteOneHasNoInterval) {
  const MeanInterval one = mean_interval({1.5});
  EXPECT_DOUBLE_EQ(one.mean, 1.5);
  EXPECT_FALSE(one.has_interval());
  EXPECT_EQ(format_mean_interval(one, 2), "1.50");
  EXPECT_FALSE(mean_interval({1, std::numeric_limits<double>::infinity()}).has_interval());
  EXPECT_TRUE(std::isnan(mean_interval({}).mean));
}

TEST(IntervalSign, BelowAboveOrAcrossZero) {
  EXPECT_EQ(interval_sign({-0.3, -0.2, -0.25}), Sign::Below);
  EXPECT_EQ(interval_sign({0.3, 0.2, 0.25}), Sign::Above);
  EXPECT_EQ(interval_sign({-0.3, 0.2, -0.25}), Sign::Straddles);
  // Every seed agreeing is not enough when they scatter this much: mean
  // -0.1, sd ~0.087, half-width ~0.22 with 3 seeds.
  EXPECT_EQ(interval_sign({-0.2, -0.05, -0.05}), Sign::Straddles);
  EXPECT_EQ(interval_sign({-0.3}), Sign::Unknown);  // one seed: no interval
}

TEST(IntervalSign, InfiniteDifferencesDecideOnlyWhenEverySeedAgrees) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(interval_sign({-inf, -inf}), Sign::Below);  // reached the target every time, the other never
  EXPECT_EQ(interval_sign({inf, inf, inf}), Sign::Above);
  EXPECT_EQ(interval_sign({-inf, -2.0}), Sign::Unknown);
  EXPECT_EQ(interval_sign({-inf}), Sign::Unknown);
}

TEST(PairedT, PValueIsTheTwoSidedStudentTTailSoItIsBelow5PercentExactlyWhenTheIntervalExcludes0) {
  const MeanInterval d = mean_interval({0.7, 1.0, 1.3});
  // t = 1 / (0.3 / sqrt(3)) with 2 degrees of freedom, whose two-sided tail
  // has the closed form 1 - t / sqrt(t^2 + 2).
  const double t = 1 / (0.3 / std::sqrt(3.0));
  EXPECT_NEAR(paired_t_p_value(d), 1 - t / std::sqrt(t * t + 2), 1e-12);
  EXPECT_LT(paired_t_p_value(d), 0.05);
  EXPECT_GT(d.low(), 0);
  const MeanInterval across = mean_interval({-0.3, 0.2, -0.25});
  EXPECT_GT(paired_t_p_value(across), 0.05);
  EXPECT_LT(across.low(), 0);
  EXPECT_GT(across.high(), 0);
  EXPECT_EQ(paired_t_p_value(mean_interval({0.5, 0.5})), 0);  // the same difference every time
  EXPECT_EQ(paired_t_p_value(mean_interval({0.0, 0.0})), 1);
  EXPECT_TRUE(std::isnan(paired_t_p_value(mean_interval({1.0}))));
}

TEST(Holm, RejectsInOrderOfPWhileEachIsWithinAlphaOverTheHypothesesLeft) {
  // Sorted: 0.01 <= 0.05/4, 0.012 <= 0.05/3, 0.03 > 0.05/2 stops it.
  EXPECT_EQ(holm_rejected({0.01, 0.04, 0.012, 0.03}), (std::vector<bool>{true, false, true, false}));
  // Three p = 0.0287 (each significant alone) are none of them within 0.05/3.
  EXPECT_EQ(holm_rejected({0.0287, 0.0287, 0.0287}), (std::vector<bool>{false, false, false}));
  EXPECT_EQ(holm_rejected({0.0287}), (std::vector<bool>{true}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(holm_rejected({nan, 0.001}), (std::vector<bool>{false, true}));
  EXPECT_TRUE(holm_rejected({}).empty());
}

}  // namespace
}  // namespace atl
