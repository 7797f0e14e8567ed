#include "model/precision.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>

#include <stdexcept>

namespace atl {

CpuBf16Features this_cpu_bf16_features() {
  CpuBf16Features f;
  f.onednn = at::hasMKLDNN();
  __builtin_cpu_init();
  f.avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  return f;
}

std::string bf16_unavailable_reason(const CpuBf16Features& f) {
  if (!f.onednn)
    return "train.precision = 'bf16' needs LibTorch built with oneDNN (MKLDNN), which this one is not; "
           "use train.precision = 'fp32'";
  if (!f.avx512_core)
    return "train.precision = 'bf16' needs a CPU with AVX-512 (F, BW, VL, DQ), where oneDNN multiplies bf16 "
           "matrices; this CPU has none, so bf16 would be emulated and slower than fp32: use "
           "train.precision = 'fp32'";
  return "";
}

std::string resolve_precision(const std::string& precision, const CpuBf16Features& f) {
  if (precision != "auto") return precision;
  return f.onednn && f.avx512_core && f.avx512_bf16 ? "bf16" : "fp32";
}

std::string resolve_precision(const std::string& precision) {
  return resolve_precision(precision, this_cpu_bf16_features());
}

void require_precision_supported(const std::string& precision) {
  if (precision != "bf16") return;
  const std::string why = bf16_unavailable_reason(this_cpu_bf16_features());
  if (!why.empty()) throw std::invalid_argument(why);
}

Bf16Forward::Bf16Forward(const std::string& precision) : active_(precision == "bf16") {
  if (!active_) return;
  was_enabled_ = at::autocast::is_cpu_enabled();
  at::autocast::set_cpu_enabled(true);
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  at::autocast::increment_nesting();
}

Bf16Forward::~Bf16Forward() {
  if (!active_) return;
  // As autocast's own scope: the outermost exit drops the cached bf16
  // copies of the weights, which the next step's weights replace anyway.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_cpu_enabled(was_enabled_);
}

}  // namespace atl
