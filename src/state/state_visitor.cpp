// StateVisitor's helpers, shared by every visitor (include/atoll/state.h):
// lists, flags, counts and optional tensors are walked through the four
// primitives, so a checkpoint writer, a reader and any in-memory visitor
// agree on them. Its own area below every user (comm, compress, strategy,
// train): it knows ATen and nothing of atoll's.
#include "atoll/state.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>

namespace atl {

void StateVisitor::tensors(const std::string& name, std::vector<at::Tensor>& list) {
  size_t n = list.size();
  count(name, n, kMinStateEntryBytes);  // a record per tensor
  if (loading() && n != list.size()) list.assign(n, at::Tensor());
  for (size_t i = 0; i < n; ++i) tensor(name + "." + std::to_string(i), list[i]);
}

void StateVisitor::integers(const std::string& name, std::vector<int64_t>& values) {
  at::Tensor t = loading() ? at::Tensor() : at::from_blob(values.data(), {int64_t(values.size())}, at::kLong);
  tensor(name, t);
  if (!loading()) return;
  if (t.scalar_type() != at::kLong || t.dim() != 1)
    throw CheckpointError("checkpoint entry '" + full_name(name) + "' is not a list of integers");
  const at::Tensor c = t.contiguous();
  values.assign(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

void StateVisitor::flag(const std::string& name, bool& value) {
  int64_t v = value ? 1 : 0;
  integer(name, v);
  value = v != 0;
}

void StateVisitor::count(const std::string& name, size_t& n, uint64_t min_bytes_each) {
  int64_t v = static_cast<int64_t>(n);
  integer(name + ".count", v);
  if (!loading()) return;
  const uint64_t left = unread_bytes(), most = left / std::max<uint64_t>(min_bytes_each, 1);
  if (v < 0 || uint64_t(v) > most)
    throw CheckpointError(source() + ": '" + full_name(name) + ".count' is " + std::to_string(v) +
                          ", but the records not yet read (" + std::to_string(left) + " bytes) hold at most " +
                          std::to_string(most) + " entries of at least " + std::to_string(min_bytes_each) +
                          " bytes: the file is corrupted");
  n = static_cast<size_t>(v);
}

void StateVisitor::optional_tensor(const std::string& name, at::Tensor& t) {
  bool defined = t.defined();
  flag(name + ".defined", defined);
  if (defined) {
    tensor(name, t);
  } else if (loading()) {
    t = at::Tensor();
  }
}

}  // namespace atl
