// Figures as the report's tables print them: a mean at a precision that
// suits it, and its 95% interval rounded to the same last digit, or left
// out when it would read 0 there (an interval narrower than the last digit
// shown is noise to a reader: "61.8 s ± 0.000551 s" says no more than
// "61.8 s"). The what-if script (network_sliders.cpp) formats the cells it
// rewrites by the same rules.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "util/stats.h"

namespace atl {

// How a figure is printed: `digits` decimals ("%.4f") or `digits`
// significant digits ("%.4g").
struct FigureFormat {
  enum Kind { Decimals, Significant };
  Kind kind = Decimals;
  int digits = 4;
};

// A mean and its interval as plain text: "2.4371" and "0.0123", or "" for
// the interval when there is none (one seed) or it would print as 0 at the
// mean's last digit.
struct FigureText {
  std::string value, interval;
};
FigureText figure_text(const MeanInterval& m, FigureFormat format);
// "2.4371 ± 0.0123", or the value alone when the interval is "".
std::string plain_text(const FigureText& t);

// The size of one unit in the last digit `format` prints of `value`
// (0.0001 for "%.4f"; 0.001 for 2.437 in "%.4g", and for 0.3410, which
// "%.4g" prints "0.341"); 0 for a zero value in significant digits, which
// has no last digit to speak of.
double last_digit(double value, FigureFormat format);

// A duration with its unit: hours above an hour ("1.20 h"), minutes above
// two ("2.5 min"), else seconds with one decimal ("61.8 s"), or three
// significant digits under a second (a tiny run's "0.0308 s").
// Negative = "never" (a target not reached).
std::string seconds_text(double s);
// The same duration with its interval in the same unit and to the same last
// digit ("61.8 s", "± 0.3 s"); the interval "" as figure_text leaves it out.
FigureText seconds_figure(const MeanInterval& m);

}  // namespace atl
