#include "model/gemm.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <dlfcn.h>
#include <torch/autograd.h>
#include <torch/nn/functional/linear.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "model/batched_matmul.h"

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

std::atomic<GemmMode> mode{GemmMode::kOpenBlas};

// train.gemm = auto. Set before any model runs and only read while they do.
std::vector<GemmRoute> routes;
std::map<ProductShape, Gemm> route_of;

// An open capture (start_product_capture): any thread's routed products.
std::atomic<bool> capturing{false};
std::mutex capture_mutex;
std::vector<ProductShape> captured;
std::set<ProductShape> captured_set;

// The matrices of a (G, rows, cols) operand as BLAS reads them: row-major
// with leading dimension `ld`, or the transpose of a row-major matrix ('T').
// Read from the strides (no per-matrix view: this runs for every product).
struct Operand {
  char trans;
  int64_t ld;
};
Operand operand(const at::Tensor& t) {
  const int64_t rows = t.size(1), cols = t.size(2), row_stride = t.stride(1), col_stride = t.stride(2);
  if (col_stride == 1 && (rows == 1 || row_stride >= cols)) return {'N', std::max<int64_t>(row_stride, cols)};
  if (row_stride == 1 && (cols == 1 || col_stride >= rows)) return {'T', std::max<int64_t>(col_stride, rows)};
  throw std::invalid_argument("onednn_mm: an operand has no unit stride");
}

Gemm gemm_for(const ProductShape& shape) {
  switch (mode.load()) {
    case GemmMode::kOpenBlas:
      return Gemm::kOpenBlas;
    case GemmMode::kOneDnn:
      return Gemm::kOneDnn;
    case GemmMode::kAuto:
      break;
  }
  if (capturing) {
    std::lock_guard<std::mutex> lock(capture_mutex);
    if (captured_set.insert(shape).second) captured.push_back(shape);
    return Gemm::kOpenBlas;
  }
  const auto it = route_of.find(shape);
  return it == route_of.end() ? Gemm::kOpenBlas : it->second;
}

// A 2-D product of a Linear layer in the library its shape is routed to.
void routed_mm(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor out3 = out.unsqueeze(0), a3 = a.unsqueeze(0), b3 = b.unsqueeze(0);
  product_in(gemm_for(product_shape(out3, a3, b3)), out3, a3, b3);
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y = x W^T with its three products each in the library train.gemm picks
// for its shape (all in oneDNN with onednn).
struct RoutedLinear : torch::autograd::Function<RoutedLinear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight) {
    RECORD_FUNCTION("atl::routed_linear", std::vector<c10::IValue>());
    const at::Tensor x2 = x.contiguous().view({-1, x.size(-1)});
    at::Tensor y = at::empty({x2.size(0), weight.size(0)}, x.options());
    routed_mm(y, x2, weight.t());
    ctx->save_for_backward({x2, weight});
    std::vector<int64_t> shape = x.sizes().vec();
    shape.back() = weight.size(0);
    return y.view(shape);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    RECORD_FUNCTION("atl::routed_linear_backward", std::vector<c10::IValue>());
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &x2 = saved[0], &weight = saved[1];
    const at::Tensor gy = grads[0].contiguous().view({-1, weight.size(0)});
    at::Tensor gx = at::empty_like(x2), gw = at::empty_like(weight);
    routed_mm(gx, gy, weight);  // dX = dY W
    routed_mm(gw, gy.t(), x2);  // dW = dY^T X
    std::vector<int64_t> shape = grads[0].sizes().vec();
    shape.back() = weight.size(1);
    return {gx.view(shape), gw};
  }
};

}  // namespace

bool onednn_sgemm_available() { return dnnl_sgemm() != nullptr; }

void set_gemm(const std::string& name) {
  if (name == "openblas") {
    mode = GemmMode::kOpenBlas;
    return;
  }
  if (name != "onednn" && name != "auto")
    throw std::invalid_argument("train.gemm must be openblas, onednn or auto, not '" + name + "'");
  if (!onednn_sgemm_available())
    throw std::runtime_error("train.gemm = '" + name +
                             "' needs oneDNN's sgemm (dnnl_sgemm), which this LibTorch has not loaded: use "
                             "train.gemm = 'openblas'");
  mode = name == "onednn" ? GemmMode::kOneDnn : GemmMode::kAuto;
}

GemmMode gemm_mode() { return mode; }

void set_gemm_routes(std::vector<GemmRoute> chosen) {
  routes = std::move(chosen);
  route_of.clear();
  for (const auto& r : routes) route_of[r.shape] = r.gemm;
}

const std::vector<GemmRoute>& gemm_routes() { return routes; }

void start_product_capture() {
  std::lock_guard<std::mutex> lock(capture_mutex);
  if (capturing) throw std::logic_error("start_product_capture: a capture is already open");
  captured.clear();
  captured_set.clear();
  capturing = true;
}

std::vector<ProductShape> stop_product_capture() {
  std::lock_guard<std::mutex> lock(capture_mutex);
  capturing = false;
  return std::move(captured);
}

bool products_in_onednn(const std::string& precision) {
  return precision == "bf16" || gemm_mode() != GemmMode::kOpenBlas;
}

void onednn_bmm(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  RECORD_FUNCTION("atl::onednn_gemm", std::vector<c10::IValue>());  // a profile's "matrix products"
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
  const Operand oa = operand(a), ob = operand(b);
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

ProductShape product_shape(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  ProductShape s;
  s.batch = a.size(0);
  s.m = out.size(1);
  s.n = out.size(2);
  s.k = a.size(2);
  if (s.batch > 0 && s.m > 0 && s.n > 0 && s.k > 0) {  // an empty product has no layout to speak of
    s.ta = operand(a).trans;
    s.tb = operand(b).trans;
  }
  s.threads = openblas_threads();
  return s;
}

void product_in(Gemm gemm, const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  if (gemm == Gemm::kOneDnn) return onednn_bmm(out, a, b);
  if (a.size(0) != 1) return openblas_bmm_into(out, a, b);
  at::Tensor out2 = out[0];
  at::mm_out(out2, a[0], b[0]);
}

std::pair<double, double> time_product(const ProductShape& s, int rounds) {
  at::NoGradGuard no_grad;
  // Each operand stored as the shape says: row-major, or the transpose of a
  // row-major matrix. Drawn from a generator of its own: a run's stays put.
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(1);
  auto stored = [&](int64_t rows, int64_t cols, char trans) {
    return trans == 'N' ? at::randn({s.batch, rows, cols}, gen) : at::randn({s.batch, cols, rows}, gen).transpose(1, 2);
  };
  const at::Tensor a = stored(s.m, s.k, s.ta), b = stored(s.k, s.n, s.tb);
  const at::Tensor out = at::empty({s.batch, s.m, s.n});
  double best[2] = {0, 0};
  for (int i = -1; i < rounds; ++i) {  // round -1 is untimed: first-call set-up and caches
    for (Gemm gemm : {Gemm::kOpenBlas, Gemm::kOneDnn}) {
      const auto t0 = std::chrono::steady_clock::now();
      product_in(gemm, out, a, b);
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      double& slot = best[gemm == Gemm::kOneDnn];
      if (i == 0 || (i > 0 && took < slot)) slot = took;
    }
  }
  return {best[0], best[1]};
}

void bmm_into(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  if (out.scalar_type() != at::kFloat) return openblas_bmm_into(out, a, b);  // ATen picks the kernel
  switch (gemm_mode()) {
    case GemmMode::kOpenBlas:
      return openblas_bmm_into(out, a, b);
    case GemmMode::kOneDnn:
      // oneDNN takes the matrices one after another and threads within each
      // on ATen's pool.
      return onednn_bmm(out, a, b);
    case GemmMode::kAuto:
      return product_in(gemm_for(product_shape(out, a, b)), out, a, b);
  }
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias) {
  if (gemm_mode() != GemmMode::kOpenBlas && x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat &&
      !at::autocast::is_cpu_enabled())
    return bias.defined() ? RoutedLinear::apply(x, weight) + bias : RoutedLinear::apply(x, weight);
  return torch::nn::functional::linear(x, weight, bias);
}

}  // namespace atl
