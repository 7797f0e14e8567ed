#include "train/worker_slot.h"

#include "strategy/baselines.h"

namespace atl {

WorkerReport WorkerSlot::report(double comm_wall, int64_t peak_window_steps) const {
  WorkerReport r;
  r.loss_sum = loss_sum;
  r.loss_count = loss_count;
  r.sim_now = clock.now();
  r.compute_s = clock.compute_seconds();
  r.blocked_s = clock.blocked_seconds();
  const Ledger& l = comm->ledger();
  r.sent = l.total_sent();
  r.received = l.total_received();
  r.ops = l.ops();
  r.network_model_s = l.total_network_seconds();
  r.comm_wall_s = comm_wall;
  r.compute_wall_s = compute_wall;
  r.sent_by_tag = l.sent_by_tag();
  r.received_by_tag = l.received_by_tag();
  const BytesByPart parts = l.sent_by_part();
  r.sent_values = parts.values;
  r.sent_indices = parts.indices;
  r.sent_scales = parts.scales;
  for (const auto& [tag, p] : l.part_shares_by_tag()) r.part_shares_by_tag[tag] = {p.values, p.indices, p.scales};
  r.peak_sent = l.peak_sent(peak_window_steps);
  if (island_comm != nullptr) {
    const Ledger& in = island_comm->ledger();
    r.intra_sent = in.total_sent();
    r.intra_received = in.total_received();
    r.intra_network_s = in.total_network_seconds();
  }
  r.events = events;
  return r;
}

void WorkerSlot::clear_window() {
  loss_sum = 0;
  loss_count = 0;
  events.clear();
}

void WorkerSlot::visit_state(StateVisitor& v) {
  {
    StateVisitor::Scope scope(v, "model");
    for (auto& item : model->named_parameters()) v.tensor(item.key(), item.value());
    for (auto& item : model->named_buffers()) v.tensor("buffer." + item.key(), item.value());
  }
  {
    StateVisitor::Scope scope(v, "strategy");
    strategy->visit_state(v);
  }
  int64_t position = static_cast<int64_t>(stream->position());
  v.integer("data.position", position);
  if (v.loading()) stream->seek(static_cast<uint64_t>(position));
  double now = clock.now(), compute = clock.compute_seconds(), blocked = clock.blocked_seconds();
  v.real("clock.now", now);
  v.real("clock.compute", compute);
  v.real("clock.blocked", blocked);
  if (v.loading()) clock.restore(now, compute, blocked);
  trace.visit_state(v);
  comm->visit_state(v);
  if (island_comm != nullptr) {
    StateVisitor::Scope scope(v, "island");
    island_comm->visit_state(v);
    island_grads->visit_state(v);
  }
  v.real("loss_sum", loss_sum);
  v.integer("loss_count", loss_count);
  v.real("compute_wall", compute_wall);
  std::string text;
  for (const auto& e : events) text += e + "\n";
  v.text("events", text);
  if (v.loading()) {
    events.clear();
    for (size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos; start = end + 1)
      events.push_back(text.substr(start, end - start));
  }
}

}  // namespace atl
