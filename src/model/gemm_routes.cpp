#include "model/gemm_routes.h"

#include <cstdio>
#include <set>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace atl {
namespace {

auto key(const ProductShape& s) { return std::tie(s.batch, s.m, s.n, s.k, s.ta, s.tb, s.threads); }

constexpr int64_t kMaxSize = (int64_t{1} << 31) - 1;  // BLAS takes 32-bit sizes
constexpr int64_t kMaxThreads = 4096;

}  // namespace

bool ProductShape::operator<(const ProductShape& o) const { return key(*this) < key(o); }
bool ProductShape::operator==(const ProductShape& o) const { return key(*this) == key(o); }

std::string describe(const ProductShape& s) {
  char text[128];
  std::snprintf(text, sizeof text, "%lld x %lld x %lld (%c %c), %lld thread%s", static_cast<long long>(s.m),
                static_cast<long long>(s.n), static_cast<long long>(s.k), s.ta, s.tb, static_cast<long long>(s.threads),
                s.threads == 1 ? "" : "s");
  return (s.batch > 1 ? "batch " + std::to_string(s.batch) + " of " : std::string()) + text;
}

Gemm faster_gemm(double openblas_seconds, double onednn_seconds) {
  return onednn_seconds < 0.95 * openblas_seconds ? Gemm::kOneDnn : Gemm::kOpenBlas;
}

const char* gemm_name(Gemm g) { return g == Gemm::kOneDnn ? "onednn" : "openblas"; }

int64_t routes_to_onednn(const std::vector<GemmRoute>& routes) {
  int64_t n = 0;
  for (const auto& r : routes) n += r.gemm == Gemm::kOneDnn;
  return n;
}

std::string describe_routes(const std::vector<GemmRoute>& routes) {
  const int64_t total = static_cast<int64_t>(routes.size()), onednn = routes_to_onednn(routes);
  if (total == 0) return "no fp32 products to route";  // a TorchScript module's, or bf16's
  const std::string shapes = " fp32 product shape" + std::string(total == 1 ? "" : "s");
  if (onednn == total || onednn == 0)
    return "all " + std::to_string(total) + shapes + " in " + (onednn == 0 ? "OpenBLAS" : "oneDNN");
  return std::to_string(onednn) + " of " + std::to_string(total) + shapes + " in oneDNN, " +
         std::to_string(total - onednn) + " in OpenBLAS";
}

std::string routes_to_text(const std::vector<GemmRoute>& routes) {
  std::string text;
  for (const auto& r : routes) {
    const ProductShape& s = r.shape;
    text += std::to_string(s.batch) + ' ' + std::to_string(s.m) + ' ' + std::to_string(s.n) + ' ' +
            std::to_string(s.k) + ' ' + s.ta + ' ' + s.tb + ' ' + std::to_string(s.threads) + ' ' + gemm_name(r.gemm) +
            '\n';
  }
  return text;
}

std::vector<GemmRoute> routes_from_text(const std::string& text, const std::string& source) {
  std::vector<GemmRoute> routes;
  std::set<ProductShape> seen;
  std::istringstream lines(text);
  std::string line;
  int64_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    auto bad = [&](const std::string& why) {
      return std::runtime_error(source + ": GEMM route " + std::to_string(number) + " ('" + line.substr(0, 80) + "') " +
                                why);
    };
    std::istringstream fields(line);
    GemmRoute r;
    ProductShape& s = r.shape;
    std::string ta, tb, library, extra;
    if (!(fields >> s.batch >> s.m >> s.n >> s.k >> ta >> tb >> s.threads >> library) || (fields >> extra))
      throw bad("is not 'batch m n k ta tb threads library'");
    for (int64_t size : {s.batch, s.m, s.n, s.k})
      if (size < 1 || size > kMaxSize) throw bad("has a size outside 1 to 2^31 - 1");
    if (s.threads < 1 || s.threads > kMaxThreads) throw bad("has threads outside 1 to 4096");
    for (const std::string* t : {&ta, &tb})
      if (*t != "N" && *t != "T") throw bad("has an operand layout other than N or T");
    s.ta = ta[0];
    s.tb = tb[0];
    if (library == "openblas")
      r.gemm = Gemm::kOpenBlas;
    else if (library == "onednn")
      r.gemm = Gemm::kOneDnn;
    else
      throw bad("names a library other than openblas or onednn");
    if (!seen.insert(s).second) throw bad("repeats a shape");
    routes.push_back(r);
  }
  return routes;
}

}  // namespace atl
