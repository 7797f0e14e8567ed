// Ledger: per-rank record of communication (see atoll/comm.h).
#include "atoll/comm.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace atl {

void Ledger::record(const LedgerEntry& e) {
  entries_.push_back(e);
  sent_ += e.sent_bytes;
  received_ += e.received_bytes;
  network_seconds_ += e.network_seconds;
  sent_by_tag_[e.tag] += e.sent_bytes;
  received_by_tag_[e.tag] += e.received_bytes;
}

void Ledger::describe_payload(int64_t first, const BytesByPart& message) {
  const double total = message.total();
  if (first < 0 || total <= 0) return;
  for (size_t i = size_t(first); i < entries_.size(); ++i) {
    entries_[i].index_share = message.indices / total;
    entries_[i].scale_share = message.scales / total;
  }
}

BytesByPart Ledger::sent_by_part() const {
  BytesByPart p;
  for (const auto& e : entries_) {
    const double indices = e.sent_bytes * e.index_share, scales = e.sent_bytes * e.scale_share;
    p.indices += indices;
    p.scales += scales;
    p.values += e.sent_bytes - indices - scales;
  }
  return p;
}

std::map<std::string, BytesByPart> Ledger::part_shares_by_tag() const {
  std::map<std::string, BytesByPart> sums;
  for (const auto& e : entries_) {
    if (e.index_share == 0 && e.scale_share == 0) continue;
    BytesByPart& p = sums[e.tag];
    p.indices += e.sent_bytes * e.index_share;
    p.scales += e.sent_bytes * e.scale_share;
    p.values += e.sent_bytes * (1 - e.index_share - e.scale_share);
  }
  for (auto& [tag, p] : sums) {
    const double total = p.total();
    if (total > 0) p = {p.values / total, p.indices / total, p.scales / total};
  }
  return sums;
}

double Ledger::peak_sent(int64_t window_steps) const {
  if (window_steps < 1) throw std::invalid_argument("Ledger::peak_sent: the window must be >= 1 step");
  // Bytes per step (entries come in step order), then the widest window.
  std::map<int64_t, double> by_step;
  for (const auto& e : entries_) by_step[e.step] += e.sent_bytes;
  double peak = 0, in_window = 0;
  auto tail = by_step.begin();
  for (auto head = by_step.begin(); head != by_step.end(); ++head) {
    in_window += head->second;
    while (head->first - tail->first >= window_steps) in_window -= (tail++)->second;
    peak = std::max(peak, in_window);
  }
  return peak;
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
  // Per entry at least: a step and an op (int64 each), four doubles (six
  // since the split by part) and a tag's '\n'.
  v.count("entries", n, 8 + 8 + 4 * 8 + 1);
  std::vector<int64_t> steps, ops;
  std::vector<double> numbers;  // payload, sent, received, network seconds per entry
  std::string tags;
  if (!v.loading()) {
    for (const auto& e : entries_) {
      steps.push_back(e.step);
      ops.push_back(static_cast<int64_t>(e.op));
      numbers.insert(numbers.end(), {e.payload_bytes, e.sent_bytes, e.received_bytes, e.network_seconds, e.index_share,
                                     e.scale_share});
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
  // Six numbers per entry; checkpoints written before the split by part have four.
  const size_t width = n > 0 && size_t(columns.numel()) == 4 * n ? 4 : 6;
  if (steps.size() != n || ops.size() != n || size_t(columns.numel()) != width * n ||
      columns.scalar_type() != at::kDouble)
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
    const double* row = x + width * i;
    e.payload_bytes = row[0];
    e.sent_bytes = row[1];
    e.received_bytes = row[2];
    e.network_seconds = row[3];
    if (width == 6) {
      e.index_share = row[4];
      e.scale_share = row[5];
    }
    record(e);
    tag_start = end + 1;
  }
  sent_mark_ = saved_sent_mark;
  received_mark_ = saved_received_mark;
}

}  // namespace atl
