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
  // Continues the metrics of `dir` after a checkpoint: both files are cut
  // back to the sizes they had then (dropping events logged after it) and
  // appended to; lines() starts with the kept events.
  MetricsLog(const std::string& dir, uint64_t jsonl_bytes, uint64_t csv_bytes);
  // Bytes written to metrics.jsonl and metrics.csv so far (checkpoints).
  uint64_t jsonl_bytes() const { return jsonl_bytes_; }
  uint64_t csv_bytes() const { return csv_bytes_; }
  void write(const nlohmann::json& event);
  const std::vector<std::string>& lines() const { return lines_; }
  // fsyncs both files and their folder (lines are only flushed to the OS
  // as written): a checkpoint that records their sizes calls this first,
  // so after a crash the files are at least as long as it says. Not per
  // line: an fsync costs milliseconds on a disk.
  void sync();

  // CSV columns, in order; an event fills those it has.
  static const std::vector<std::string>& csv_columns();

 private:
  std::vector<std::string> lines_;
  std::string dir_;  // empty: in memory only
  std::ofstream jsonl_, csv_;
  uint64_t jsonl_bytes_ = 0, csv_bytes_ = 0;
};

}  // namespace atl
