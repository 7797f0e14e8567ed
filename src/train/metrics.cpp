#include "train/metrics.h"

#include <filesystem>
#include <stdexcept>

namespace atl {

const std::vector<std::string>& MetricsLog::csv_columns() {
  static const std::vector<std::string> columns = {
      "event",      "step",        "loss",       "val_loss",  "lr",
      "tokens",     "elapsed_s",   "sim_time_s", "compute_s", "blocked_s",
      "utilisation", "bytes_sent_per_worker", "bytes_received_per_worker", "correlation"};
  return columns;
}

MetricsLog::MetricsLog(const std::string& dir) {
  if (dir.empty()) return;
  const auto base = std::filesystem::path(dir);
  jsonl_.open(base / "metrics.jsonl", std::ios::out | std::ios::trunc);
  csv_.open(base / "metrics.csv", std::ios::out | std::ios::trunc);
  if (!jsonl_ || !csv_) throw std::runtime_error("cannot write metrics files in '" + dir + "'");
  const auto& cols = csv_columns();
  for (size_t i = 0; i < cols.size(); ++i) csv_ << (i ? "," : "") << cols[i];
  csv_ << "\n";
  csv_.flush();
}

void MetricsLog::write(const nlohmann::json& event) {
  std::string line = event.dump();
  if (jsonl_.is_open()) {
    jsonl_ << line << "\n";
    jsonl_.flush();
  }
  const std::string kind = event.value("event", "");
  if (csv_.is_open() && (kind == "train" || kind == "eval")) {
    const auto& cols = csv_columns();
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i) csv_ << ",";
      auto it = event.find(cols[i]);
      if (it == event.end() || it->is_null()) continue;
      if (it->is_string()) {
        csv_ << it->get<std::string>();
      } else {
        csv_ << it->dump();
      }
    }
    csv_ << "\n";
    csv_.flush();
  }
  lines_.push_back(std::move(line));
}

}  // namespace atl
