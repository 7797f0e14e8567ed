// Mixed precision for the training forward pass (train.precision).
//
// bf16 works as autocast does on GPUs: inside a Bf16Forward scope the
// matrix products (linear layers, attention's batched products) take bf16
// copies of their operands and return bf16, while LayerNorm, softmax, the
// residual stream, the loss and everything after the forward pass (the
// gradients reaching the fp32 parameters, clipping, the optimizer state, the
// strategies' reductions and payload codecs) stay in fp32. Evaluation runs
// outside the scope, in fp32, so that a precision setting changes what is
// trained, never how it is judged.
#pragma once

#include <string>

namespace atl {

// What the CPU offers for bf16 products (oneDNN's test: AVX-512 BW, VL and
// DQ, with native AVX512_BF16 the fast path).
struct CpuBf16Features {
  bool onednn = false;       // LibTorch was built with oneDNN (MKLDNN)
  bool avx512_core = false;  // AVX-512 F, BW, VL and DQ
  bool avx512_bf16 = false;  // native bf16 dot products
};
CpuBf16Features this_cpu_bf16_features();

// "" when train.precision = "bf16" can run with `f`, else why not and what
// to do instead.
std::string bf16_unavailable_reason(const CpuBf16Features& f);

// train.precision = "auto": bf16 where the CPU multiplies bf16 natively
// (oneDNN with AVX-512 BF16; AMX CPUs have it too), where it trains about
// 1.8x faster with losses within 0.002; fp32 elsewhere (emulated bf16 is
// slower than fp32). "fp32" and "bf16" are returned as they are.
std::string resolve_precision(const std::string& precision, const CpuBf16Features& f);
// The same for this machine.
std::string resolve_precision(const std::string& precision);

// Throws std::invalid_argument when `precision` cannot run on this machine.
void require_precision_supported(const std::string& precision);

// RAII: bf16 autocast on the calling thread while it lives (a no-op for
// "fp32"). Thread-local, like autocast itself: each worker opens its own.
class Bf16Forward {
 public:
  explicit Bf16Forward(const std::string& precision);
  ~Bf16Forward();
  Bf16Forward(const Bf16Forward&) = delete;
  Bf16Forward& operator=(const Bf16Forward&) = delete;

 private:
  bool active_ = false;
  bool was_enabled_ = false;
};

}  // namespace atl
