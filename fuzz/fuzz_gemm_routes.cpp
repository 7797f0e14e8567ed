// libFuzzer target: routes_from_text() (src/model/gemm_routes.cpp), which
// reads a checkpoint's GEMM routes (train.gemm = auto) back on resume.
//
// For an input that parses: every size is 1 to 2^31 - 1, threads 1 to 4096,
// no shape repeats, and routes_to_text() of the routes parses again to the
// same text.
//
// Expected: std::runtime_error naming the source. Findings: crashes,
// sanitizer reports, any other exception, a broken round trip.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/gemm_routes.h"

namespace {

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_gemm_routes: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<atl::GemmRoute> routes;
  try {
    routes = atl::routes_from_text(text, "step-5/worker-0.ckpt");
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).rfind("step-5/worker-0.ckpt: GEMM route", 0) != 0) fail("an error that names no source");
    return 0;
  }
  for (const auto& r : routes) {
    for (int64_t n : {r.shape.batch, r.shape.m, r.shape.n, r.shape.k})
      if (n < 1 || n > (int64_t{1} << 31) - 1) fail("a size out of range was accepted");
    if (r.shape.threads < 1 || r.shape.threads > 4096) fail("a thread count out of range was accepted");
  }
  const std::string once = atl::routes_to_text(routes);
  if (atl::routes_to_text(atl::routes_from_text(once, "again")) != once) fail("round trip differs");
  return 0;
}
