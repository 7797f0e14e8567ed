#include "train/worker_report.h"

namespace atl {

nlohmann::json WorkerReport::to_json() const {
  return {{"loss_sum", loss_sum}, {"loss_count", loss_count}, {"sim_now", sim_now},
          {"compute_s", compute_s}, {"blocked_s", blocked_s}, {"sent", sent},
          {"received", received}, {"ops", ops}, {"network_model_s", network_model_s},
          {"comm_wall_s", comm_wall_s}, {"compute_wall_s", compute_wall_s}, {"sent_by_tag", sent_by_tag},
          {"events", events}, {"intra_sent", intra_sent}, {"intra_received", intra_received},
          {"intra_network_s", intra_network_s}};
}

WorkerReport WorkerReport::from_json(const nlohmann::json& j) {
  WorkerReport r;
  r.loss_sum = j.at("loss_sum");
  r.loss_count = j.at("loss_count");
  r.sim_now = j.at("sim_now");
  r.compute_s = j.at("compute_s");
  r.blocked_s = j.at("blocked_s");
  r.sent = j.at("sent");
  r.received = j.at("received");
  r.ops = j.at("ops");
  r.network_model_s = j.at("network_model_s");
  r.comm_wall_s = j.at("comm_wall_s");
  r.compute_wall_s = j.at("compute_wall_s");
  r.sent_by_tag = j.at("sent_by_tag").get<std::map<std::string, double>>();
  r.events = j.at("events").get<std::vector<std::string>>();
  r.intra_sent = j.at("intra_sent");
  r.intra_received = j.at("intra_received");
  r.intra_network_s = j.at("intra_network_s");
  return r;
}

}  // namespace atl
