// Metrics: one JSON object per event in metrics.jsonl (flushed as written)
// and the common numeric columns in metrics.csv for spreadsheets.
// Thread-safety: call from one thread at a time (the driver's observer).
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace atl {

class MetricsLog {
 public:
  // `dir` empty: keep events in memory only.
  explicit MetricsLog(const std::string& dir);
  void write(const nlohmann::json& event);
  const std::vector<std::string>& lines() const { return lines_; }

  // CSV columns, in order; an event fills those it has.
  static const std::vector<std::string>& csv_columns();

 private:
  std::vector<std::string> lines_;
  std::ofstream jsonl_, csv_;
};

}  // namespace atl
