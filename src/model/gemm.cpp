#include "model/gemm.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <dlfcn.h>
#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>

#include <atomic>
#include <stdexcept>

namespace atl {
namespace {

// oneDNN's C API: row-major C = alpha op(A) op(B) + beta C; returns a
// dnnl_status_t (0 = success).
using DnnlSgemm = int (*)(char, char, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
DnnlSgemm dnnl_sgemm() {
  static const auto f = reinterpret_cast<DnnlSgemm>(dlsym(RTLD_DEFAULT, "dnnl_sgemm"));
  return f;
}

std::atomic<Gemm> chosen{Gemm::kOpenBlas};

// A 2-D operand as BLAS reads it: row-major with leading dimension `ld`, or
// the transpose of a row-major matrix ('T').
struct Operand {
  char trans;
  int64_t ld;
};
Operand operand(const at::Tensor& t) {
  if (t.stride(1) == 1 && (t.size(0) == 1 || t.stride(0) >= t.size(1)))
    return {'N', std::max<int64_t>(t.stride(0), t.size(1))};
  if (t.stride(0) == 1 && (t.size(1) == 1 || t.stride(1) >= t.size(0)))
    return {'T', std::max<int64_t>(t.stride(1), t.size(0))};
  throw std::invalid_argument("onednn_mm: an operand has no unit stride");
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y = x W^T with its three products in oneDNN.
struct OneDnnLinear : torch::autograd::Function<OneDnnLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight) {
    RECORD_FUNCTION("atl::onednn_linear", std::vector<c10::IValue>());
    const at::Tensor x2 = x.contiguous().view({-1, x.size(-1)});
    at::Tensor y = at::empty({x2.size(0), weight.size(0)}, x.options());
    onednn_mm(y, x2, weight.t());
    ctx->save_for_backward({x2, weight});
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = weight.size(0);
    return y.view(shape);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("atl::onednn_linear_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x2 = saved[0], &weight = saved[1];
    const at::Tensor gy = grads[0].contiguous().view({-1, weight.size(0)});
    at::Tensor gx = at::empty_like(x2), gw = at::empty_like(weight);
    onednn_mm(gx, gy, weight);  // dX = dY W
    onednn_mm(gw, gy.t(), x2);  // dW = dY^T X
    std::vector<int64_t> shape = grads[0].sizes().vec();
    shape.back() = weight.size(1);
    return {gx.view(shape), gw};
  }
};

}  // namespace

bool onednn_sgemm_available() { return dnnl_sgemm() != nullptr; }

void set_gemm(const std::string& name) {
  if (name == "openblas") {
    chosen = Gemm::kOpenBlas;
  } else if (name == "onednn") {
    if (!onednn_sgemm_available())
      throw std::runtime_error(
          "train.gemm = 'onednn' needs oneDNN's sgemm (dnnl_sgemm), which this LibTorch has not loaded: use "
          "train.gemm = 'openblas'");
    chosen = Gemm::kOneDnn;
  } else {
    throw std::invalid_argument("train.gemm must be openblas or onednn, not '" + name + "'");
  }
}

Gemm current_gemm() { return chosen; }

bool products_in_onednn(const std::string& precision) { return precision == "bf16" || current_gemm() == Gemm::kOneDnn; }

void onednn_bmm(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(out.scalar_type() == at::kFloat && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat,
              "onednn_mm: fp32 only");
  TORCH_CHECK(out.dim() == 3 && a.dim() == 3 && b.dim() == 3, "onednn_bmm: 3-D tensors");
  const int64_t batch = a.size(0), m = a.size(1), k = a.size(2), n = b.size(2);
  TORCH_CHECK(b.size(0) == batch && b.size(1) == k && out.size(0) == batch && out.size(1) == m && out.size(2) == n,
              "onednn_bmm: sizes do not match");
  TORCH_CHECK(out.stride(2) == 1, "onednn_mm: the output needs a unit column stride");
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    out.zero_();
    return;
  }
  const Operand oa = operand(a[0]), ob = operand(b[0]);
  const int64_t ldc = std::max<int64_t>(out.stride(1), n);
  const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
  float* pc = out.data_ptr<float>();
  for (int64_t i = 0; i < batch; ++i) {
    const int status = dnnl_sgemm()(oa.trans, ob.trans, m, n, k, 1.f, pa + i * a.stride(0), oa.ld, pb + i * b.stride(0),
                                    ob.ld, 0.f, pc + i * out.stride(0), ldc);
    TORCH_CHECK(status == 0, "oneDNN's sgemm failed with status ", status);
  }
}

void onednn_mm(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  onednn_bmm(out.unsqueeze(0), a.unsqueeze(0), b.unsqueeze(0));
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (current_gemm() == Gemm::kOneDnn && x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat &&
      !at::autocast::is_cpu_enabled())
    return bias.defined() ? OneDnnLinear::apply(x, weight) + bias : OneDnnLinear::apply(x, weight);
  return torch::nn::functional::linear(x, weight, bias);
}

}  // namespace atl
