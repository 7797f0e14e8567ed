#include "bench/op_timer.h"

#include <ATen/record_function.h>

#include <chrono>
#include <vector>

namespace atl::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Frame {
  Clock::time_point start;
  double children = 0;  // seconds spent in ops called from this one
};

// Per thread: only the thread that made the OpTimer records (`sink` set).
struct ThreadState {
  std::map<std::string, double>* sink = nullptr;
  std::vector<Frame> open;  // the ops running, outermost first
};
thread_local ThreadState state;

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction&) {
  if (state.sink != nullptr) state.open.push_back({Clock::now(), 0});
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  if (state.sink == nullptr || state.open.empty()) return;
  const Frame f = state.open.back();
  state.open.pop_back();
  const double elapsed = std::chrono::duration<double>(Clock::now() - f.start).count();
  (*state.sink)[fn.name()] += elapsed - f.children;  // the op's own time
  if (!state.open.empty()) state.open.back().children += elapsed;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

OpTimer::OpTimer() {
  state = ThreadState{&seconds_, {}};
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end)
          .needsInputs(false)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE}));
}

OpTimer::~OpTimer() {
  at::removeCallback(handle_);
  state = ThreadState{};
}

const std::vector<std::string>& op_kinds() {
  static const std::vector<std::string> kinds = {"matrix products", "GELU", "softmax",        "copies",
                                                 "layer norm",      "loss", "other ATen ops", "other"};
  return kinds;
}

std::string op_kind(const std::string& op) {
  if (contains(op, "gelu")) return "GELU";
  if (contains(op, "softmax") && !contains(op, "log_softmax")) return "softmax";
  if (contains(op, "layer_norm")) return "layer norm";
  if (contains(op, "cross_entropy") || contains(op, "nll") || contains(op, "log_softmax")) return "loss";
  if (op == "atl::onednn_gemm") return "matrix products";  // oneDNN's sgemm (model/gemm.h)
  if (op.rfind("aten::", 0) != 0) return "other";          // autograd nodes' and atoll scopes' own time
  for (const char* product : {"mm", "matmul", "linear"})
    if (contains(op, product)) return "matrix products";
  for (const char* copy : {"aten::copy_", "aten::clone", "aten::contiguous", "aten::cat", "aten::stack"})
    if (op == copy) return "copies";
  return "other ATen ops";
}

}  // namespace atl::bench
