// Where a training step's time goes, op by op: the own time of each ATen op,
// autograd node and atoll scope on the calling thread (its wall time less
// that of the ops it called), from LibTorch's RecordFunction hooks (the ones
// its own profiler uses). Own times add up to at most the thread's wall
// time; work on other threads (micro-batch and attention helpers) is not
// seen, only the op that waits for it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace atl::bench {

class OpTimer {
 public:
  OpTimer();  // starts timing ops on this thread
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

  // Own seconds per op name ("aten::mm", "aten::gelu_backward",
  // "autograd::engine::evaluate_function: MmBackward0").
  const std::map<std::string, double>& seconds_by_op() const { return seconds_; }

 private:
  std::map<std::string, double> seconds_;
  uint64_t handle_ = 0;
};

// The kind of work an op does, for the bench's table: "matrix products",
// "GELU", "softmax", "layer norm", "loss", "copies" (the ops that move data:
// copy_, clone, contiguous, cat, stack; reshape's copies run in these),
// "other ATen ops" (elementwise, views, the optimizer's updates), or "other"
// (the own time of autograd nodes and atoll's scopes: bookkeeping between
// kernels).
std::string op_kind(const std::string& op);
// Every kind op_kind() returns, in the bench's order.
const std::vector<std::string>& op_kinds();

}  // namespace atl::bench
