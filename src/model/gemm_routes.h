// train.gemm = auto: each fp32 product shape a run's training step issues
// goes to the GEMM library measured faster at it on this machine, OpenBLAS
// or oneDNN's sgemm (docs/BENCHMARKS.md: neither wins at every shape). A
// table of routes says which; it is measured once at the start of a run
// (train/gemm_choice.h), shown in the start event and kept in every
// checkpoint, so that a resumed run multiplies as the run it continues.
// Torch-free: the checkpoint's text form is parsed here (and fuzzed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace atl {

// The fp32 GEMM libraries a product can run in.
enum class Gemm { kOpenBlas, kOneDnn };

// A product as the GEMM sees it: `batch` products out (m, n) = op(a) (m, k)
// times op(b) (k, n), each operand row-major ('N') or the transpose of a
// row-major matrix ('T'), on `threads` compute threads.
struct ProductShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  char ta = 'N', tb = 'N';
  int64_t threads = 1;
  bool operator<(const ProductShape& o) const;
  bool operator==(const ProductShape& o) const;
};

// "4096 x 2304 x 768 (N T), 1 thread" (m x n x k; "batch 32 of" first when batched).
std::string describe(const ProductShape& s);

struct GemmRoute {
  ProductShape shape;
  Gemm gemm = Gemm::kOpenBlas;
  // Best time of one product in each library, measured at the run's start
  // (0 when the route was read back from a checkpoint).
  double openblas_seconds = 0, onednn_seconds = 0;
};

// oneDNN where it is at least 5% faster, else OpenBLAS (LibTorch's own): a
// near tie stays where it is, so that timing noise decides fewer shapes.
Gemm faster_gemm(double openblas_seconds, double onednn_seconds);

// "openblas" | "onednn".
const char* gemm_name(Gemm g);

// How many routes send their shape to oneDNN.
int64_t routes_to_onednn(const std::vector<GemmRoute>& routes);

// "9 of 14 fp32 product shapes in oneDNN, 5 in OpenBLAS" ("all 14 ... in
// oneDNN" when they all go one way).
std::string describe_routes(const std::vector<GemmRoute>& routes);

// Checkpoints: one line per route, "batch m n k ta tb threads library", and
// back. routes_from_text throws std::runtime_error naming `source` for text
// that is not such a table (sizes 1 to 2^31 - 1, threads 1 to 4096, no shape
// twice).
std::string routes_to_text(const std::vector<GemmRoute>& routes);
std::vector<GemmRoute> routes_from_text(const std::string& text, const std::string& source);

}  // namespace atl
