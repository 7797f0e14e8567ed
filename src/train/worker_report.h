// What one worker tells the observer at an observation step. Real runs send
// it between processes as JSON, so it is plain data.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace atl {

// One worker's figures at an observation, as the observer needs them.
struct WorkerReport {
  double loss_sum = 0;
  int64_t loss_count = 0;
  double sim_now = 0, compute_s = 0, blocked_s = 0;  // virtual clock
  double sent = 0, received = 0;
  int64_t ops = 0;
  double network_model_s = 0;  // sum of the network model's op times (the ledger's)
  // Islands: bytes and network time on the links inside the island (the
  // figures above are then the wide-area ones between islands).
  double intra_sent = 0, intra_received = 0, intra_network_s = 0;
  double comm_wall_s = 0;     // real runs: measured wall time inside collectives
  double compute_wall_s = 0;  // real runs: measured wall time of forward/backward and updates
  std::map<std::string, double> sent_by_tag, received_by_tag;
  // Sent bytes by part (values, indices, scales), each tag's shares by part
  // (tags whose messages carry indices or scales: a retimed run splits its
  // new totals by them), and the most bytes sent within any
  // run.peak_window_steps consecutive steps.
  double sent_values = 0, sent_indices = 0, sent_scales = 0;
  std::map<std::string, std::vector<double>> part_shares_by_tag;  // tag -> {values, indices, scales}
  double peak_sent = 0;
  std::vector<std::string> events;  // "fault" events (JSON lines) since the last report

  nlohmann::json to_json() const;
  static WorkerReport from_json(const nlohmann::json& j);
};

// The end event's peak_bandwidth_per_worker: the busiest worker's peak
// (`peak_bytes` within `window_steps` steps) over that many steps of the
// workers' mean compute, `compute_s` in `steps` steps: the rate its link
// must carry to hide that window behind the compute. null without compute.
inline nlohmann::json peak_bandwidth(double peak_bytes, double window_steps, double compute_s, double steps) {
  const double per_step = steps > 0 ? compute_s / steps : 0.0;
  if (!(per_step > 0)) return nullptr;
  return peak_bytes / (window_steps * per_step);
}

// Bounds on a report from a peer rank (parse_worker_report).
constexpr size_t kMaxReportBytes = size_t(16) << 20;
constexpr size_t kMaxReportTags = 4096;
constexpr size_t kMaxReportEvents = 10000;
constexpr size_t kMaxEventBytes = 64 * 1024;

// A peer's report (the JSON text to_json() makes), parsed strictly: every
// field present with its type (counts non-negative integers, figures finite
// numbers), at most the bounds above, nesting bounded (util/json_input.h),
// each event a JSON object. Throws
// std::invalid_argument saying what is wrong and naming `who` ("rank 3").
// Real runs' rank 0 reads every other rank's report through this.
WorkerReport parse_worker_report(const std::string& text, const std::string& who);

}  // namespace atl
