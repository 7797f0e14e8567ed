// Reading a finished run folder (summary.json, metrics.jsonl, config.toml)
// into the series and figures the report and the claims use.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "atoll/config.h"
#include "atoll/report.h"
#include "util/format.h"
#include "util/json_input.h"

namespace atl {
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path, const std::string& what_missing) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(what_missing);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double number_or(const nlohmann::json& j, const char* key, double fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

// A figure that may be null (undefined) or absent (older runs): NaN then.
double number_or_nan(const nlohmann::json& j, const char* key) {
  return number_or(j, key, std::numeric_limits<double>::quiet_NaN());
}

// The task of a run made before the start event recorded it: the MNIST
// models classify, a TorchScript model scored by MSE regresses, and the
// rest (GPT, TorchScript on text) model language.
std::string task_from_config(const std::map<std::string, std::string>& config) {
  auto value = [&](const char* key) {
    auto it = config.find(key);
    return it == config.end() ? std::string() : it->second;
  };
  const std::string kind = value("model.kind");
  if (kind == "\"mlp\"" || kind == "\"cnn\"") return "classification";
  if (kind == "\"torchscript\"" && value("model.loss") == "\"mse\"") return "regression";
  return "language";
}

}  // namespace

RunData load_run(const std::string& dir_text) {
  const fs::path dir(dir_text);
  const std::string not_finished = "'" + dir_text + "' is not a finished run (no summary.json)";
  const std::string summary = read_text(dir / "summary.json", not_finished);
  const std::string metrics = read_text(dir / "metrics.jsonl", "'" + dir_text + "' has no metrics.jsonl");
  // Read last, so a malformed metrics file is reported before a missing config.
  std::optional<std::string> config;
  if (fs::exists(dir / "config.toml")) config = read_text(dir / "config.toml", "");
  return parse_run(dir_text, summary, metrics, config);
}

RunData parse_run(const std::string& dir_text, const std::string& summary_text, const std::string& metrics_text,
                  const std::optional<std::string>& config_text) {
  const fs::path dir(dir_text);
  RunData run;
  run.dir = dir_text;
  run.name = dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
  nlohmann::json summary;
  try {
    summary = parse_json_input(summary_text, "'" + (dir / "summary.json").string() + "'");
    run.final_val_loss = summary.at("final_val_loss").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("'" + (dir / "summary.json").string() + "' is malformed: " + e.what());
  }
  run.bytes_sent_per_worker = number_or(summary, "bytes_sent_per_worker", 0);
  run.sim_seconds = number_or(summary, "sim_time_s", 0);
  run.utilisation = number_or(summary, "compute_utilisation", 1);
  run.wall_seconds = number_or(summary, "wall_s", 0);
  run.workers = static_cast<int64_t>(number_or(summary, "workers", 1));
  run.steps = static_cast<int64_t>(number_or(summary, "steps", 0));
  run.params = static_cast<int64_t>(number_or(summary, "params", 0));
  run.intra_bytes_sent_per_worker = number_or(summary, "intra_bytes_sent_per_worker", -1);
  run.final_val_accuracy = number_or_nan(summary, "final_val_accuracy");
  bool task_recorded = false;

  std::istringstream lines(metrics_text);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (line.empty()) continue;
    check_json_depth(line, "'" + (dir / "metrics.jsonl").string() + "' line " + std::to_string(line_no));
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_discarded() || !e.is_object())
      throw std::runtime_error("'" + (dir / "metrics.jsonl").string() + "' line " + std::to_string(line_no) +
                               " is not a JSON object");
    const std::string kind = e.value("event", "");
    if (kind == "start") {
      run.strategy = e.value("strategy", "");
      run.global_batch_tokens = static_cast<int64_t>(number_or(e, "global_batch_tokens", 0));
      run.global_batch_examples = static_cast<int64_t>(number_or(e, "global_batch_examples", 0));
      if (e.contains("task") && e["task"].is_string()) {
        run.task = e["task"].get<std::string>();
        task_recorded = true;
      }
      run.islands = static_cast<int64_t>(number_or(e, "islands", 0));
      run.devices_per_island = static_cast<int64_t>(number_or(e, "devices_per_island", 1));
      run.exchange = e.value("exchange", "");
    } else if (kind == "eval") {
      run.eval_step.push_back(number_or(e, "step", 0));
      run.eval_loss.push_back(number_or(e, "val_loss", 0));
      run.eval_bytes.push_back(number_or(e, "bytes_sent_per_worker", 0));
      run.eval_time.push_back(number_or(e, "sim_time_s", 0));
    } else if (kind == "train" && e.contains("correlation") && e["correlation"].is_number()) {
      run.corr_step.push_back(number_or(e, "step", 0));
      run.corr.push_back(e["correlation"].get<double>());
      run.update_corr.push_back(number_or_nan(e, "update_correlation"));
      run.disagreement.push_back(number_or_nan(e, "disagreement"));
    } else if (kind == "end") {
      if (e.contains("final_correlation") && e["final_correlation"].is_number()) {
        run.final_correlation = e["final_correlation"].get<double>();
        run.has_correlation = true;
      }
      run.final_update_correlation = number_or_nan(e, "final_update_correlation");
      run.final_disagreement = number_or_nan(e, "final_disagreement");
      run.final_val_loss_se = number_or_nan(e, "final_val_loss_se");
      if (e.contains("final_val_loss_se_unit") && e["final_val_loss_se_unit"].is_string())
        run.final_val_loss_se_unit = e["final_val_loss_se_unit"].get<std::string>();
      run.network_seconds = number_or(e, "network_model_s_per_worker", 0);
      run.intra_network_seconds = number_or(e, "intra_network_model_s_per_worker", 0);
      if (e.contains("ledger_per_worker") && e["ledger_per_worker"].is_array())
        for (const auto& w : e["ledger_per_worker"]) run.bytes_sent_total += number_or(w, "sent", 0);
    }
  }
  if (run.bytes_sent_total <= 0) run.bytes_sent_total = run.bytes_sent_per_worker * static_cast<double>(run.workers);
  const fs::path config_path = dir / "config.toml";
  if (!config_text) throw std::runtime_error("'" + dir_text + "' has no config.toml");
  run.config = only_keys(with_keys_added_later(flatten_toml(*config_text, config_path.string())), is_computation_key);
  if (!task_recorded) run.task = task_from_config(run.config);
  return run;
}

bool counts_tokens(const RunData& run) { return run.task == "language"; }

std::string workers_label(const RunData& run) {
  if (run.islands <= 0) return std::to_string(run.workers);
  return std::to_string(run.islands) + "x" + std::to_string(run.devices_per_island) + " " + run.exchange;
}

std::string islands_note(const std::vector<std::pair<std::string, const RunData*>>& settings) {
  std::string inside;
  for (const auto& [name, r] : settings)
    if (r->intra_bytes_sent_per_worker >= 0)
      inside += (inside.empty() ? "" : "; ") + name + " " + format_megabytes(r->intra_bytes_sent_per_worker) +
                " MB in " + format_number("%.3g", r->intra_network_seconds) + " s inside, " +
                format_number("%.3g", r->network_seconds) + " s between";
  if (inside.empty()) return "";
  return "Islands (N = islands x devices, exchange): sent/worker counts the wide-area links between islands. "
         "Per worker, bytes sent inside the islands and the network model's time on each link class: " +
         inside + ".\n";
}

const RunData& reference_run(const std::vector<RunData>& runs, const std::string& name) {
  if (runs.empty()) throw std::invalid_argument("no runs to compare");
  if (!name.empty()) {
    for (const auto& r : runs)
      if (r.name == name) return r;
    throw std::invalid_argument("baseline '" + name + "' is not one of the runs");
  }
  const RunData* ddp = ddp_run(runs);
  return ddp ? *ddp : runs.front();
}

const RunData* ddp_run(const std::vector<RunData>& runs) {
  for (const auto& r : runs)
    if (r.strategy == "ddp") return &r;
  return nullptr;
}

double time_to_loss(const RunData& run, double target) {
  // The evaluation before any training does not count as reaching it.
  for (size_t i = 0; i < run.eval_loss.size(); ++i)
    if (run.eval_step[i] > 0 && run.eval_loss[i] <= target) return run.eval_time[i];
  return -1;
}

}  // namespace atl
