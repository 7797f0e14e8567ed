#include "train/metrics.h"

#include <filesystem>
#include <stdexcept>

#include "util/file_io.h"

namespace atl {

const std::vector<std::string>& MetricsLog::csv_columns() {
  static const std::vector<std::string> columns = {
      "event", "step", "loss", "val_loss", "lr", "tokens", "elapsed_s", "sim_time_s", "compute_s", "blocked_s",
      "utilisation", "bytes_sent_per_worker", "bytes_received_per_worker", "correlation",
      // Added later, so older spreadsheets keep their column positions.
      "val_loss_se", "update_correlation", "update_correlation_min", "disagreement"};
  return columns;
}

MetricsLog::MetricsLog(const std::string& dir) : dir_(dir) {
  if (dir.empty()) return;
  const auto base = std::filesystem::path(dir);
  jsonl_.open(base / "metrics.jsonl", std::ios::out | std::ios::trunc);
  csv_.open(base / "metrics.csv", std::ios::out | std::ios::trunc);
  if (!jsonl_ || !csv_) throw std::runtime_error("cannot write metrics files in '" + dir + "'");
  const auto& cols = csv_columns();
  for (size_t i = 0; i < cols.size(); ++i) csv_ << (i ? "," : "") << cols[i];
  csv_ << "\n";
  csv_.flush();
  csv_bytes_ = static_cast<uint64_t>(csv_.tellp());
}

MetricsLog::MetricsLog(const std::string& dir, uint64_t jsonl_bytes, uint64_t csv_bytes)
    : dir_(dir), jsonl_bytes_(jsonl_bytes), csv_bytes_(csv_bytes) {
  namespace fs = std::filesystem;
  const auto base = fs::path(dir);
  for (const auto& [name, size] : {std::pair<const char*, uint64_t>{"metrics.jsonl", jsonl_bytes},
                                   std::pair<const char*, uint64_t>{"metrics.csv", csv_bytes}}) {
    std::error_code ec;
    const uint64_t have = fs::file_size(base / name, ec);
    if (ec || have < size)
      throw std::runtime_error("cannot resume: '" + (base / name).string() + "' is missing or shorter than at the " +
                               "checkpoint (" + std::to_string(size) + " bytes); the run folder was changed");
    fs::resize_file(base / name, size);
  }
  std::ifstream in(base / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) lines_.push_back(line);
  jsonl_.open(base / "metrics.jsonl", std::ios::out | std::ios::app);
  csv_.open(base / "metrics.csv", std::ios::out | std::ios::app);
  if (!jsonl_ || !csv_) throw std::runtime_error("cannot write metrics files in '" + dir + "'");
}

void MetricsLog::sync() {
  if (dir_.empty()) return;
  jsonl_.flush();
  csv_.flush();
  if (!jsonl_ || !csv_) throw std::runtime_error("cannot write metrics files in '" + dir_ + "' (disk full?)");
  const auto base = std::filesystem::path(dir_);
  sync_file((base / "metrics.jsonl").string());
  sync_file((base / "metrics.csv").string());
  sync_folder(dir_);
}

void MetricsLog::write(const nlohmann::json& event) {
  std::string line = event.dump();
  if (jsonl_.is_open()) {
    jsonl_ << line << "\n";
    jsonl_.flush();
    jsonl_bytes_ += line.size() + 1;
  }
  const std::string kind = event.value("event", "");
  if (csv_.is_open() && (kind == "train" || kind == "eval")) {
    const auto& cols = csv_columns();
    std::string row;
    for (size_t i = 0; i < cols.size(); ++i) {
      if (i) row += ",";
      auto it = event.find(cols[i]);
      if (it == event.end() || it->is_null()) continue;
      row += it->is_string() ? it->get<std::string>() : it->dump();
    }
    row += "\n";
    csv_ << row;
    csv_.flush();
    csv_bytes_ += row.size();
  }
  lines_.push_back(std::move(line));
}

}  // namespace atl
