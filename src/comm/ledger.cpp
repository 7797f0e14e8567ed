// Ledger: per-rank record of communication (see atoll/comm.h).
#include "atoll/comm.h"

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
