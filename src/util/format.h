// Number formatting shared by the config writer, metrics and reports.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atl {

// printf-style formatting of one double, e.g. format_number("%.4f", x).
std::string format_number(const char* printf_format, double v);

// The shortest of 15..17 significant digits that reads back exactly (0.2
// stays "0.2", round trips stay exact), with a '.' or exponent as TOML needs.
std::string format_double_exact(double v);

// The delimiter row ("|---|---|") for a Markdown table whose header line is
// `header` ("| a | b |"): one cell per header cell, or the table does not
// render.
std::string markdown_delimiter(const std::string& header);

// `s` without leading and trailing spaces, tabs, CRs and newlines.
std::string trim(const std::string& s);

// A shape as NumPy prints it: "(3,)", "(2, 4)", "()".
std::string shape_tuple(const std::vector<int64_t>& shape);
// A shape as a list: "[3]", "[2, 4]", "[]".
std::string shape_list(const std::vector<int64_t>& shape);

}  // namespace atl
