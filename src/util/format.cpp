#include "util/format.h"

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <iomanip>
#include <sstream>

namespace atl {

std::string format_number(const char* printf_format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

std::string format_double_exact(double v) {
  std::string s;
  for (int digits = 15; digits <= 17; ++digits) {
    std::ostringstream o;
    o << std::setprecision(digits) << v;
    s = o.str();
    if (std::strtod(s.c_str(), nullptr) == v) break;
  }
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string markdown_delimiter(const std::string& header) {
  const long bars = std::count(header.begin(), header.end(), '|');
  std::string out = "|";
  for (long cell = 1; cell < bars; ++cell) out += "---|";
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

namespace {
std::string joined_dims(const std::vector<int64_t>& shape) {
  std::string out;
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out;
}
}  // namespace

std::string shape_tuple(const std::vector<int64_t>& shape) {
  return "(" + joined_dims(shape) + (shape.size() == 1 ? ",)" : ")");
}

std::string shape_list(const std::vector<int64_t>& shape) { return "[" + joined_dims(shape) + "]"; }

}  // namespace atl
