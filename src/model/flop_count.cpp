// Counting the products a forward pass runs (flop_count.h): ATen calls a
// RecordFunction callback around every operator dispatched on a thread
// with callbacks, with the operator's name, its inputs and its outputs.
#include "model/flop_count.h"

#include <ATen/core/grad_mode.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "model/dry_pass.h"

namespace atl {
namespace {

// How an operator's FLOPs follow from its operands. A product of K-long
// rows costs 2 K per output element; `operand` is the input whose last
// dimension is K.
enum class Rule {
  kContract,        // 2 K per output element (mm, addmm, bmm, matmul, linear, mv...)
  kBatchSum,        // addbmm: the output sums the B products, 2 K B per output element
  kDot,             // dot, vdot: 2 x the vectors' length
  kConv,            // 2 x (C_in / groups) x kernel per output element; weight = input 1
  kConvTransposed,  // every input element meets (C_out / groups) x kernel weights
  kConvEither,      // aten::convolution, _convolution: input 6 says which
  kAttention,       // softmax(Q K^T) V: 2 L S (E + E_v) per batch and head
};

struct OpRule {
  const char* name;
  Rule rule;
  int operand;
};

// Operators are named as the dispatcher names them (no overload name). The
// attention entries are fused kernels whose products are not dispatched
// operators of their own (LibTorch 2.x's flash attention on the CPU); a
// hand-written attention is counted through its matmuls.
constexpr OpRule kRules[] = {
    {"aten::mm", Rule::kContract, 0},
    {"aten::addmm", Rule::kContract, 1},
    {"aten::_addmm_activation", Rule::kContract, 1},
    {"aten::bmm", Rule::kContract, 0},
    {"aten::baddbmm", Rule::kContract, 1},
    {"aten::addbmm", Rule::kBatchSum, 1},
    {"aten::matmul", Rule::kContract, 0},
    {"aten::linear", Rule::kContract, 0},
    {"aten::mv", Rule::kContract, 0},
    {"aten::addmv", Rule::kContract, 1},
    {"aten::dot", Rule::kDot, 0},
    {"aten::vdot", Rule::kDot, 0},
    {"aten::conv1d", Rule::kConv, 1},
    {"aten::conv2d", Rule::kConv, 1},
    {"aten::conv3d", Rule::kConv, 1},
    {"aten::_convolution_mode", Rule::kConv, 1},
    {"aten::conv_transpose1d", Rule::kConvTransposed, 1},
    {"aten::conv_transpose2d", Rule::kConvTransposed, 1},
    {"aten::conv_transpose3d", Rule::kConvTransposed, 1},
    {"aten::convolution", Rule::kConvEither, 1},
    {"aten::_convolution", Rule::kConvEither, 1},
    {"aten::scaled_dot_product_attention", Rule::kAttention, 0},
    {"aten::_scaled_dot_product_attention", Rule::kAttention, 0},
    {"aten::_scaled_dot_product_attention_math", Rule::kAttention, 0},
    {"aten::_scaled_dot_product_flash_attention", Rule::kAttention, 0},
    {"aten::_scaled_dot_product_flash_attention_for_cpu", Rule::kAttention, 0},
    {"aten::_scaled_dot_product_efficient_attention", Rule::kAttention, 0},
};

const OpRule* find_rule(const char* name) {
  if (name == nullptr) return nullptr;
  for (const auto& r : kRules)
    if (std::strcmp(r.name, name) == 0) return &r;
  return nullptr;
}

const at::Tensor* tensor_at(c10::ArrayRef<const c10::IValue> in, int i) {
  if (i < 0 || size_t(i) >= in.size() || !in[size_t(i)].isTensor()) return nullptr;
  const at::Tensor& t = in[size_t(i)].toTensor();
  return t.defined() ? &t : nullptr;
}

// The product of a weight's dimensions after the first: (C_in / groups) x
// kernel for a convolution's (C_out, C_in / groups, k...), (C_out / groups)
// x kernel for a transposed one's (C_in, C_out / groups, k...).
double per_filter(const at::Tensor& w) {
  double n = 1;
  for (int64_t d = 1; d < w.dim(); ++d) n *= double(w.size(d));
  return n;
}

// What one counted operator will add: `fixed` FLOPs plus `per_output` for
// each element of its first output (known only when it returns).
struct Cost {
  double fixed = 0, per_output = 0;
};

bool operator_cost(const OpRule& r, c10::ArrayRef<const c10::IValue> in, Cost& c) {
  const at::Tensor* a = tensor_at(in, r.operand);
  if (a == nullptr || a->dim() < 1) return false;
  switch (r.rule) {
    case Rule::kContract:
      c.per_output = 2.0 * double(a->size(-1));
      return true;
    case Rule::kBatchSum:
      if (a->dim() != 3) return false;
      c.per_output = 2.0 * double(a->size(0)) * double(a->size(2));
      return true;
    case Rule::kDot:
      c.fixed = 2.0 * double(a->numel());
      return true;
    case Rule::kConvEither:
      if (in.size() > 6 && in[6].isBool() && in[6].toBool()) {
        const at::Tensor* x = tensor_at(in, 0);
        if (x == nullptr) return false;
        c.fixed = 2.0 * double(x->numel()) * per_filter(*a);
        return true;
      }
      c.per_output = 2.0 * per_filter(*a);
      return true;
    case Rule::kConv:
      c.per_output = 2.0 * per_filter(*a);
      return true;
    case Rule::kConvTransposed: {
      const at::Tensor* x = tensor_at(in, 0);
      if (x == nullptr) return false;
      c.fixed = 2.0 * double(x->numel()) * per_filter(*a);
      return true;
    }
    case Rule::kAttention: {
      const at::Tensor *k = tensor_at(in, 1), *v = tensor_at(in, 2);
      if (a->dim() < 2 || k == nullptr || v == nullptr || k->dim() < 2 || v->dim() < 1) return false;
      const double L = double(a->size(-2)), E = double(a->size(-1)), S = double(k->size(-2)), Ev = double(v->size(-1));
      const double heads = L * E > 0 ? double(a->numel()) / (L * E) : 0;
      c.fixed = 2.0 * heads * L * S * (E + Ev);
      return true;
    }
  }
  return false;
}

}  // namespace

struct ProductFlopCounter::State {
  FlopCount count;
  int64_t depth = 0;  // counted operators open on this thread
};

namespace {

// RecordFunction takes plain function pointers, so the callbacks find the
// counter through this pointer; being thread-local, it is null on every
// thread but the counting one (ATen may carry the callbacks over to helper
// threads, which must not count).
thread_local ProductFlopCounter::State* active_state = nullptr;

struct OpenOperator : at::ObserverContext {
  ProductFlopCounter::State* state = nullptr;
  const char* name = nullptr;
  bool outermost = false;
  size_t returns = 0;  // the operator's outputs, at the end of what RecordFunction hands the end callback
  Cost cost;
};

std::unique_ptr<at::ObserverContext> on_operator_start(const at::RecordFunction& fn) {
  ProductFlopCounter::State* state = active_state;
  if (state == nullptr) return nullptr;
  const OpRule* rule = find_rule(fn.name());
  if (rule == nullptr) return nullptr;
  // A boxed call (the TorchScript interpreter's) hands the callbacks its
  // whole stack, the values of the expression around the call included:
  // the operator's own arguments are the last ones, its outputs likewise.
  const auto schema = fn.operator_schema();
  if (!schema) return nullptr;
  const size_t args = schema->arguments().size();
  const c10::ArrayRef<const c10::IValue> stack = fn.inputs();
  if (stack.size() < args) return nullptr;
  auto open = std::make_unique<OpenOperator>();
  open->state = state;
  open->name = rule->name;
  open->outermost = state->depth == 0;
  open->returns = schema->returns().size();
  // Operands the table cannot read (a 0-dim matmul operand): the operators
  // it calls are counted instead.
  if (open->outermost && !operator_cost(*rule, stack.slice(stack.size() - args, args), open->cost)) return nullptr;
  ++state->depth;
  return open;
}

void on_operator_end(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  auto* open = static_cast<OpenOperator*>(ctx);
  if (open == nullptr || open->state == nullptr) return;
  --open->state->depth;
  if (!open->outermost) return;
  double flops = open->cost.fixed;
  const auto& out = fn.outputs();
  if (open->cost.per_output > 0 && open->returns > 0 && out.size() >= open->returns) {
    const c10::IValue& first = out[out.size() - open->returns];
    if (first.isTensor() && first.toTensor().defined())
      flops += open->cost.per_output * double(first.toTensor().numel());
  }
  open->state->count.flops += flops;
  open->state->count.by_op[open->name] += flops;
}

}  // namespace

ProductFlopCounter::ProductFlopCounter() : state_(std::make_unique<State>()) {
  if (active_state != nullptr) throw std::logic_error("ProductFlopCounter: one counter per thread at a time");
  active_state = state_.get();
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&on_operator_start, &on_operator_end)
                                           .needsInputs(true)
                                           .needsOutputs(true)
                                           .scopes({at::RecordScope::FUNCTION}));
}

ProductFlopCounter::~ProductFlopCounter() {
  at::removeCallback(handle_);
  active_state = nullptr;
}

const FlopCount& ProductFlopCounter::count() const { return state_->count; }

double count_training_flops_per_example(Model& model, const at::Tensor& x, const at::Tensor& y) {
  if (!x.defined() || x.dim() < 1 || x.size(0) < 1)
    throw std::invalid_argument(
        "counting the model's FLOPs needs an example batch, and the data gave none: set "
        "model.flops_per_sample (training FLOPs of one example)");
  double forward = 0;
  {
    DryPass pass(model);
    model.train(true);
    at::NoGradGuard no_grad;
    // RecordFunction may have been switched off on this thread (a profiler
    // guard); the count needs it.
    at::RecordFunctionGuard record(true);
    ProductFlopCounter counter;
    model.loss(x.clone(), y.clone());
    forward = counter.count().flops;
  }
  return 3.0 * forward / double(x.size(0));
}

ModelFlops model_training_flops(const ModelConfig& cfg, Model& model, const at::Tensor& x, const at::Tensor& y) {
  const double tokens = double(model.tokens_per_example());
  ModelFlops f;
  if (cfg.kind != "torchscript") {
    f.per_token = model.flops_per_token();
    f.per_example = f.per_token * tokens;
    f.source = "formula";
    return f;
  }
  if (cfg.flops_per_sample > 0) {
    f.per_example = cfg.flops_per_sample;
    f.source = "model.flops_per_sample";
  } else {
    f.per_example = count_training_flops_per_example(model, x, y);
    f.source = "counted";
  }
  f.per_token = f.per_example / tokens;
  return f;
}

std::string describe_model_flops(const ModelFlops& f) {
  char figure[64];
  std::snprintf(figure, sizeof figure, "%.4g", f.per_example);
  std::string why;
  if (f.source == "counted")
    why = "counted: 3 x the matrix products, convolutions and attention of one forward pass";
  else if (f.source == "model.flops_per_sample")
    why = "given by model.flops_per_sample";
  else
    why = "the built-in model's formula: 6 x parameters per token, plus attention for GPT";
  return std::string(figure) + " training FLOPs per example (" + why + ")";
}

}  // namespace atl
