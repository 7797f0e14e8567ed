// Ledger: per-rank record of communication (see atoll/comm.h).
#include "atoll/comm.h"

#include <ATen/ATen.h>

#include <stdexcept>

namespace atl {

void Ledger::record(const LedgerEntry& e) {
  entries_.push_back(e);
  sent_ += e.sent_bytes;
  received_ += e.received_bytes;
  network_seconds_ += e.network_seconds;
  sent_by_tag_[e.tag] += e.sent_bytes;
}

double Ledger::take_sent_since_mark() {
  const double d = sent_ - sent_mark_;
  sent_mark_ = sent_;
  return d;
}

double Ledger::take_received_since_mark() {
  const double d = received_ - received_mark_;
  received_mark_ = received_;
  return d;
}

}  // namespace atl

namespace atl {

void Ledger::visit_state(StateVisitor& v) {
  // Columns of the entries; tags as one text joined by '\n' (tags never hold one).
  size_t n = entries_.size();
  // Per entry: a step and an op (int64 each), four doubles and a tag's '\n'.
  v.count("entries", n, 8 + 8 + 4 * 8 + 1);
  std::vector<int64_t> steps, ops;
  std::vector<double> numbers;  // payload, sent, received, network seconds per entry
  std::string tags;
  if (!v.loading()) {
    for (const auto& e : entries_) {
      steps.push_back(e.step);
      ops.push_back(static_cast<int64_t>(e.op));
      numbers.insert(numbers.end(), {e.payload_bytes, e.sent_bytes, e.received_bytes, e.network_seconds});
      tags += e.tag + "\n";
    }
  }
  v.integers("steps", steps);
  v.integers("ops", ops);
  at::Tensor columns =
      v.loading() ? at::Tensor() : at::from_blob(numbers.data(), {int64_t(numbers.size())}, at::kDouble);
  v.tensor("numbers", columns);
  v.text("tags", tags);
  v.real("sent_mark", sent_mark_);
  v.real("received_mark", received_mark_);
  if (!v.loading()) return;
  if (steps.size() != n || ops.size() != n || size_t(columns.numel()) != 4 * n || columns.scalar_type() != at::kDouble)
    throw std::runtime_error("checkpoint ledger columns disagree in length");
  const double saved_sent_mark = sent_mark_, saved_received_mark = received_mark_;
  *this = Ledger();
  const double* x = columns.contiguous().data_ptr<double>();
  size_t tag_start = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t end = tags.find('\n', tag_start);
    if (end == std::string::npos) throw std::runtime_error("checkpoint ledger has fewer tags than entries");
    LedgerEntry e;
    e.step = steps[i];
    e.op = static_cast<CommOp>(ops[i]);
    e.tag = tags.substr(tag_start, end - tag_start);
    e.payload_bytes = x[4 * i];
    e.sent_bytes = x[4 * i + 1];
    e.received_bytes = x[4 * i + 2];
    e.network_seconds = x[4 * i + 3];
    record(e);
    tag_start = end + 1;
  }
  sent_mark_ = saved_sent_mark;
  received_mark_ = saved_received_mark;
}

}  // namespace atl
