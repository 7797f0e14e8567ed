// How the report's tables print a mean and its interval: the interval at
// the mean's last digit, never one that would read 0 there.
#include <gtest/gtest.h>

#include <cmath>

#include "report/figure_text.h"
#include "util/stats.h"

namespace atl {
namespace {

MeanInterval mean_pm(double mean, double half_width) {
  MeanInterval m;
  m.mean = mean;
  m.half_width = half_width;
  m.n = 3;
  return m;
}

TEST(ReportFigures, AnIntervalBelowTheLastDigitShownIsLeftOut) {
  // The compare report's "61.8 s ± 0.000551 s": modelled times every seed shares.
  EXPECT_EQ(seconds_figure(mean_pm(61.8, 0.000551)).value, "61.8 s");
  EXPECT_EQ(seconds_figure(mean_pm(61.8, 0.000551)).interval, "");
  EXPECT_EQ(figure_text(mean_pm(2.43712, 0.00004), {FigureFormat::Decimals, 4}).interval, "");
  // Over half a unit of the last digit, it shows.
  EXPECT_EQ(figure_text(mean_pm(2.43712, 0.00006), {FigureFormat::Decimals, 4}).interval, "0.0001");
  // Exactly 0 (every seed alike) and no interval (one seed) show none either.
  EXPECT_EQ(figure_text(mean_pm(2.4, 0), {FigureFormat::Decimals, 4}).interval, "");
  MeanInterval one = mean_pm(2.4, std::nan(""));
  one.n = 1;
  EXPECT_EQ(figure_text(one, {FigureFormat::Decimals, 4}).interval, "");
}

TEST(ReportFigures, AnIntervalIsPrintedToTheSameLastDigitAsItsMean) {
  // Before: "8.6 s ± 0.424 s" (the interval finer than the time it qualifies).
  const FigureText t = seconds_figure(mean_pm(8.61, 0.4243));
  EXPECT_EQ(t.value, "8.6 s");
  EXPECT_EQ(t.interval, "0.4 s");
  EXPECT_EQ(figure_text(mean_pm(2.4371, 0.01234), {FigureFormat::Decimals, 4}).interval, "0.0123");
  // Significant digits: 0.0308 shows its last digit at 1e-4.
  EXPECT_EQ(seconds_figure(mean_pm(0.030812, 0.0012345)).value, "0.0308 s");
  EXPECT_EQ(seconds_figure(mean_pm(0.030812, 0.0012345)).interval, "0.0012 s");
  EXPECT_EQ(figure_text(mean_pm(0.1234, 0.0567), {FigureFormat::Significant, 4}).interval, "0.0567");
  // "%g" drops trailing zeros: the report's "0.341 ± 0.0746" was finer than its mean.
  EXPECT_EQ(figure_text(mean_pm(0.3410, 0.0746), {FigureFormat::Significant, 4}).value, "0.341");
  EXPECT_EQ(figure_text(mean_pm(0.3410, 0.0746), {FigureFormat::Significant, 4}).interval, "0.075");
  // A mean in exponent form keeps its interval in it.
  const FigureText tiny = figure_text(mean_pm(4.5123e-5, 1.234e-6), {FigureFormat::Significant, 3});
  EXPECT_EQ(tiny.value, "4.51e-05");
  EXPECT_EQ(tiny.interval, "1.2e-06");
  // An interval larger than the mean keeps the mean's last digit too.
  EXPECT_EQ(seconds_figure(mean_pm(22.8, 96.53)).interval, "96.5 s");
}

TEST(ReportFigures, DurationsPickTheirUnitByTheMeanAndTheIntervalFollowsIt) {
  EXPECT_EQ(seconds_text(-1), "never");
  EXPECT_EQ(seconds_text(0.0308), "0.0308 s");
  EXPECT_EQ(seconds_text(61.84), "61.8 s");
  EXPECT_EQ(seconds_text(150), "2.5 min");
  EXPECT_EQ(seconds_text(4320), "1.20 h");
  const FigureText minutes = seconds_figure(mean_pm(150, 7.5));
  EXPECT_EQ(minutes.value, "2.5 min");
  EXPECT_EQ(minutes.interval, "0.1 min");                           // 0.125 min, at the mean's tenth of a minute
  EXPECT_EQ(seconds_figure(mean_pm(4320, 30)).interval, "0.01 h");  // 0.0083 h
  EXPECT_EQ(seconds_figure(mean_pm(4320, 15)).interval, "");        // 0.0042 h: below half of 0.01 h
}

TEST(ReportFigures, TheLastDigitOfSignificantDigitsFollowsTheRoundedValue) {
  EXPECT_DOUBLE_EQ(last_digit(2.437, {FigureFormat::Significant, 4}), 0.001);
  EXPECT_DOUBLE_EQ(last_digit(9.9996, {FigureFormat::Significant, 4}), 1);      // prints "10"
  EXPECT_DOUBLE_EQ(last_digit(0.3410, {FigureFormat::Significant, 4}), 0.001);  // prints "0.341"
  EXPECT_DOUBLE_EQ(last_digit(4.5123e-5, {FigureFormat::Significant, 3}), 1e-7);
  EXPECT_DOUBLE_EQ(last_digit(123.0, {FigureFormat::Decimals, 1}), 0.1);
  EXPECT_EQ(last_digit(0, {FigureFormat::Significant, 4}), 0);
}

TEST(ReportFigures, MarkdownTablesLeaveOutAnIntervalThatPrintsAsZero) {
  // atoll compare's "12.4 ± 0.0" and "1.13 ± 0.00".
  EXPECT_EQ(format_mean_interval(mean_pm(12.4, 0.0003), 1), "12.4");
  EXPECT_EQ(format_mean_interval(mean_pm(1.13, 0.004), 2), "1.13");
  EXPECT_EQ(format_mean_interval(mean_pm(1.13, 0.006), 2), "1.13 ± 0.01");
}

}  // namespace
}  // namespace atl
