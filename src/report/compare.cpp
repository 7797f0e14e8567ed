#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "atoll/report.h"
#include "util/format.h"

namespace atl {
namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("'" + path.parent_path().string() + "' is not a finished run (no summary.json)");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("'" + path.string() + "' is not valid JSON: " + e.what());
  }
}

// The strategy line of the start event in metrics.jsonl.
nlohmann::json start_event(const std::filesystem::path& dir) {
  std::ifstream in(dir / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto e = nlohmann::json::parse(line, nullptr, false);
    if (!e.is_discarded() && e.value("event", "") == "start") return e;
  }
  return nlohmann::json::object();
}

// "0.02x (50x fewer)" style: readable whichever way the ratio goes.
std::string bytes_ratio(double bytes, double base) {
  if (base <= 0) return bytes > 0 ? "-" : "0";
  if (bytes <= 0) return "0";
  const double r = bytes / base;
  if (r >= 1) return format_number("%.4gx", r);
  return format_number("%.3gx", r) + format_number(" (%.4gx fewer)", 1.0 / r);
}

// The workers' parameter correlation at the end, "-" for one worker or runs
// made before it was logged.
std::string final_correlation(const nlohmann::json& summary) {
  if (!summary.contains("end")) return "-";
  const auto& end = summary["end"];
  if (!end.contains("final_correlation") || !end["final_correlation"].is_number()) return "-";
  return format_number("%.4f", end["final_correlation"].get<double>());
}

// A figure of the end event ("-" when absent, null, or for older runs).
std::string end_figure(const nlohmann::json& summary, const char* key, const char* format) {
  if (!summary.contains("end")) return "-";
  const auto& end = summary["end"];
  if (!end.contains(key) || !end[key].is_number()) return "-";
  return format_number(format, end[key].get<double>());
}

}  // namespace

std::string format_megabytes(double bytes) {
  if (bytes <= 0) return "0";
  const double mb = bytes / 1e6;
  return mb >= 100 ? format_number("%.0f", mb) : mb >= 1 ? format_number("%.1f", mb) : format_number("%.3g", mb);
}

std::string compare_runs(const std::vector<std::string>& run_dirs) {
  if (run_dirs.empty()) throw std::invalid_argument("compare needs at least one run folder");
  std::ostringstream o;
  o << "| run | strategy | N | steps | global batch tokens | final val loss | vs first | sent/worker (MB) | "
       "bytes vs first | sim time (s) | utilisation | correlation | update correlation | disagreement |\n";
  o << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  double base_loss = 0, base_bytes = 0;
  for (size_t i = 0; i < run_dirs.size(); ++i) {
    const std::filesystem::path dir(run_dirs[i]);
    const auto s = read_json(dir / "summary.json");
    const auto start = start_event(dir);
    const double loss = s.at("final_val_loss").get<double>();
    const double bytes = s.at("bytes_sent_per_worker").get<double>();
    if (i == 0) {
      base_loss = loss;
      base_bytes = bytes;
    }
    o << "| " << dir.filename().string() << " | " << start.value("strategy", "?") << " | "
      << s.value("workers", 0) << " | " << s.value("steps", 0) << " | " << start.value("global_batch_tokens", 0)
      << " | " << format_number("%.4f", loss) << " | " << format_number("%+.2f%%", 100.0 * (loss / base_loss - 1)) << " | "
      << format_number("%.2f", bytes / 1e6) << " | "
      << bytes_ratio(bytes, base_bytes)
      << " | " << format_number("%.1f", s.value("sim_time_s", 0.0)) << " | "
      << format_number("%.1f%%", 100.0 * s.value("compute_utilisation", 1.0)) << " | " << final_correlation(s) << " | "
      << end_figure(s, "final_update_correlation", "%.4f") << " | " << end_figure(s, "final_disagreement", "%.4g")
      << " |\n";
  }
  return o.str();
}

}  // namespace atl
