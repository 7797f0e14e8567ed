#include "report/figure_text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "util/format.h"

namespace atl {
namespace {

std::string printed(double v, FigureFormat f) {
  char fmt[16];
  std::snprintf(fmt, sizeof fmt, f.kind == FigureFormat::Decimals ? "%%.%df" : "%%.%dg", f.digits);
  return format_number(fmt, v);
}

// The power of ten of `v` as "%.Ne" rounds it (9.99 to three digits is 1.00e+01).
int decimal_exponent(double v, int significant) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", std::max(0, significant - 1), v);
  const char* e = std::strchr(buf, 'e');
  return e ? std::atoi(e + 1) : 0;
}

// The last digit of a printed number, read off the text: "%g" drops
// trailing zeros ("0.341" for 0.3410), so the text, not the format, says
// where the reader's precision ends.
double last_digit_of(const std::string& text) {
  const auto e = text.find('e');
  const std::string mantissa = text.substr(0, e);
  const auto dot = mantissa.find('.');
  const int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  const int exponent = e == std::string::npos ? 0 : std::atoi(text.c_str() + e + 1);
  return std::pow(10.0, exponent - decimals);
}

// The interval rounded to the last digit `unit` of its mean; "" when that
// rounds it to 0. In exponent form when the mean is ("4.51e-05 ± 1.2e-06").
std::string interval_at(double half_width, double unit, bool exponent_form) {
  if (!(half_width >= 0.5 * unit) || half_width <= 0) return "";
  const int unit_exponent = static_cast<int>(std::lround(std::log10(unit)));
  if (exponent_form) {
    const int digits_after_point = std::max(0, decimal_exponent(half_width, 1) - unit_exponent);
    return format_number(("%." + std::to_string(digits_after_point) + "e").c_str(), half_width);
  }
  return format_number(("%." + std::to_string(std::max(0, -unit_exponent)) + "f").c_str(), half_width);
}

}  // namespace

double last_digit(double value, FigureFormat format) {
  if (format.kind == FigureFormat::Significant && (value == 0 || !std::isfinite(value))) return 0;
  return last_digit_of(printed(value, format));
}

FigureText figure_text(const MeanInterval& m, FigureFormat format) {
  FigureText t;
  t.value = printed(m.mean, format);
  if (!m.has_interval() || !std::isfinite(m.mean)) return t;
  const double unit = last_digit(m.mean, format);
  if (unit == 0) {  // a zero mean in significant digits: the interval at its own precision
    if (m.half_width > 0) t.interval = printed(m.half_width, format);
    return t;
  }
  t.interval = interval_at(m.half_width, unit, t.value.find('e') != std::string::npos);
  return t;
}

namespace {

// The unit a duration is shown in, and how.
struct DurationUnit {
  double seconds;
  const char* name;
  FigureFormat format;
};
DurationUnit duration_unit(double s) {
  if (s >= 3600) return {3600, "h", {FigureFormat::Decimals, 2}};
  if (s >= 120) return {60, "min", {FigureFormat::Decimals, 1}};
  if (s < 1) return {1, "s", {FigureFormat::Significant, 3}};
  return {1, "s", {FigureFormat::Decimals, 1}};
}

}  // namespace

std::string plain_text(const FigureText& t) { return t.value + (t.interval.empty() ? "" : " ± " + t.interval); }

std::string seconds_text(double s) {
  if (s < 0) return "never";
  const DurationUnit u = duration_unit(s);
  return printed(s / u.seconds, u.format) + " " + u.name;
}

FigureText seconds_figure(const MeanInterval& m) {
  if (m.mean < 0) return {"never", ""};
  const DurationUnit u = duration_unit(m.mean);
  MeanInterval scaled = m;
  scaled.mean /= u.seconds;
  scaled.half_width /= u.seconds;
  FigureText t = figure_text(scaled, u.format);
  t.value += std::string(" ") + u.name;
  if (!t.interval.empty()) t.interval += std::string(" ") + u.name;
  return t;
}

}  // namespace atl
