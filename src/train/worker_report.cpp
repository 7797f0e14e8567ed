#include "train/worker_report.h"

#include "util/json_input.h"

#include <cmath>
#include <stdexcept>

namespace atl {
namespace {

double finite_number(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw std::invalid_argument(std::string("no \"") + key + "\"");
  if (!it->is_number()) throw std::invalid_argument(std::string("\"") + key + "\" is not a number");
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw std::invalid_argument(std::string("\"") + key + "\" is not finite");
  return v;
}

int64_t count(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw std::invalid_argument(std::string("no \"") + key + "\"");
  if (it->is_number_unsigned() && it->get<uint64_t>() <= uint64_t(INT64_MAX)) return it->get<int64_t>();
  if (it->is_number_integer() && it->get<int64_t>() >= 0) return it->get<int64_t>();
  throw std::invalid_argument(std::string("\"") + key + "\" is not a non-negative integer");
}

}  // namespace

nlohmann::json WorkerReport::to_json() const {
  return {{"loss_sum", loss_sum},
          {"loss_count", loss_count},
          {"sim_now", sim_now},
          {"compute_s", compute_s},
          {"blocked_s", blocked_s},
          {"sent", sent},
          {"received", received},
          {"ops", ops},
          {"network_model_s", network_model_s},
          {"comm_wall_s", comm_wall_s},
          {"compute_wall_s", compute_wall_s},
          {"sent_by_tag", sent_by_tag},
          {"received_by_tag", received_by_tag},
          {"sent_values", sent_values},
          {"sent_indices", sent_indices},
          {"sent_scales", sent_scales},
          {"part_shares_by_tag", part_shares_by_tag},
          {"peak_sent", peak_sent},
          {"events", events},
          {"intra_sent", intra_sent},
          {"intra_received", intra_received},
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
  r.received_by_tag = j.at("received_by_tag").get<std::map<std::string, double>>();
  r.sent_values = j.at("sent_values");
  r.sent_indices = j.at("sent_indices");
  r.sent_scales = j.at("sent_scales");
  r.part_shares_by_tag = j.at("part_shares_by_tag").get<std::map<std::string, std::vector<double>>>();
  r.peak_sent = j.at("peak_sent");
  r.events = j.at("events").get<std::vector<std::string>>();
  r.intra_sent = j.at("intra_sent");
  r.intra_received = j.at("intra_received");
  r.intra_network_s = j.at("intra_network_s");
  return r;
}

WorkerReport parse_worker_report(const std::string& text, const std::string& who) {
  try {
    if (text.size() > kMaxReportBytes)
      throw std::invalid_argument(std::to_string(text.size()) + " bytes (at most " + std::to_string(kMaxReportBytes) +
                                  ")");
    const nlohmann::json j = parse_json_input(text, "its report");
    if (!j.is_object()) throw std::invalid_argument("not a JSON object");
    WorkerReport r;
    r.loss_sum = finite_number(j, "loss_sum");
    r.loss_count = count(j, "loss_count");
    r.sim_now = finite_number(j, "sim_now");
    r.compute_s = finite_number(j, "compute_s");
    r.blocked_s = finite_number(j, "blocked_s");
    r.sent = finite_number(j, "sent");
    r.received = finite_number(j, "received");
    r.ops = count(j, "ops");
    r.network_model_s = finite_number(j, "network_model_s");
    r.comm_wall_s = finite_number(j, "comm_wall_s");
    r.compute_wall_s = finite_number(j, "compute_wall_s");
    r.intra_sent = finite_number(j, "intra_sent");
    r.intra_received = finite_number(j, "intra_received");
    r.intra_network_s = finite_number(j, "intra_network_s");
    r.sent_values = finite_number(j, "sent_values");
    r.sent_indices = finite_number(j, "sent_indices");
    r.sent_scales = finite_number(j, "sent_scales");
    r.peak_sent = finite_number(j, "peak_sent");
    for (const char* key : {"sent_by_tag", "received_by_tag"}) {
      const auto tags = j.find(key);
      if (tags == j.end() || !tags->is_object() || tags->size() > kMaxReportTags)
        throw std::invalid_argument(std::string("\"") + key + "\" is not an object of at most " +
                                    std::to_string(kMaxReportTags) + " numbers");
      auto& out = std::string(key) == "sent_by_tag" ? r.sent_by_tag : r.received_by_tag;
      for (const auto& [tag, v] : tags->items()) out[tag] = finite_number(*tags, tag.c_str());
    }
    const auto shares = j.find("part_shares_by_tag");
    if (shares == j.end() || !shares->is_object() || shares->size() > kMaxReportTags)
      throw std::invalid_argument("\"part_shares_by_tag\" is not an object of at most " +
                                  std::to_string(kMaxReportTags) + " entries");
    for (const auto& [tag, v] : shares->items()) {
      if (!v.is_array() || v.size() != 3)
        throw std::invalid_argument("\"part_shares_by_tag\"'s \"" + tag + "\" is not 3 numbers");
      std::vector<double> three;
      for (const auto& x : v) {
        if (!x.is_number() || !std::isfinite(x.get<double>()))
          throw std::invalid_argument("\"part_shares_by_tag\"'s \"" + tag + "\" holds a non-number");
        three.push_back(x.get<double>());
      }
      r.part_shares_by_tag[tag] = three;
    }
    const auto events = j.find("events");
    if (events == j.end() || !events->is_array() || events->size() > kMaxReportEvents)
      throw std::invalid_argument("\"events\" is not an array of at most " + std::to_string(kMaxReportEvents) +
                                  " events");
    for (const auto& e : *events) {
      if (!e.is_string() || e.get_ref<const std::string&>().size() > kMaxEventBytes)
        throw std::invalid_argument("an event is not a string of at most " + std::to_string(kMaxEventBytes) + " bytes");
      // Events go into rank 0's metrics.jsonl: only JSON objects, written
      // back in rank 0's own formatting (one line, control characters escaped).
      const nlohmann::json event = parse_json_input(e.get_ref<const std::string&>(), "an event");
      if (!event.is_object()) throw std::invalid_argument("an event is not a JSON object");
      r.events.push_back(event.dump());
    }
    return r;
  } catch (const std::exception& e) {
    throw std::invalid_argument(who + " sent a report atoll cannot accept: " + e.what());
  }
}

}  // namespace atl
