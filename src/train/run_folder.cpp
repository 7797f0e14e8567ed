#include "train/run_folder.h"

#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "atoll/setup.h"
#include "model/export.h"
#include "train/checkpoint.h"
#include "util/file_io.h"

namespace atl {
namespace fs = std::filesystem;

fs::path run_folder(const Config& cfg) { return fs::path(cfg.run.out_dir) / cfg.run.name; }

namespace {

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read '" + path.string() + "'");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A TorchScript run trains the module file as it was when the run started;
// the run folder keeps that copy (export --format=torchscript re-saves it),
// and a resume with a changed file would train a different model.
void check_module_unchanged(const Config& cfg, const fs::path& dir) {
  if (cfg.model.kind != "torchscript") return;
  const fs::path kept = dir / kRunModuleFile;
  if (!fs::is_regular_file(kept))
    throw std::runtime_error("cannot resume '" + dir.string() + "': it has no " + kRunModuleFile +
                             " (the module it started with)");
  if (file_bytes(kept) != file_bytes(cfg.model.path))
    throw std::runtime_error("cannot resume '" + dir.string() + "': model.path '" + cfg.model.path +
                             "' differs from the module the run started with (" + kept.string() +
                             "); resume with --model.path=" + kept.string());
}

bool is_run_entry(const std::string& name) {
  for (const char* kept : {"config.toml", "metrics.jsonl", "metrics.csv", "summary.json", "checkpoints", "timing",
                           kRunModelFile, kRunModuleFile}) {
    if (name == kept) return true;
    // An atomic write killed between creating its temporary file and the
    // rename leaves <name>.tmp.XXXXXX (util/file_io.h).
    if (name.rfind(std::string(kept) + ".tmp", 0) == 0) return true;
  }
  return false;
}

}  // namespace

bool holds_only_run_entries(const fs::path& dir, std::string* why) {
  std::error_code ec;
  std::vector<std::string> foreign;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string n = entry.path().filename().string();
    if (!is_run_entry(n) || entry.is_symlink()) foreign.push_back(n);
  }
  if (ec) {
    if (why) *why = "it cannot be listed (" + ec.message() + ")";
    return false;
  }
  if (foreign.empty()) return true;
  if (why) {
    std::string names;
    for (size_t i = 0; i < foreign.size() && i < 5; ++i) names += (i ? ", " : "") + foreign[i];
    if (foreign.size() > 5) names += " and " + std::to_string(foreign.size() - 5) + " more";
    *why = "it holds what atoll does not write in a run folder (" + names + ")";
  }
  return false;
}

bool is_run_folder(const fs::path& dir, std::string* why) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec) || !fs::is_directory(dir, ec)) {
    if (why) *why = "it is not a folder";
    return false;
  }
  if (!holds_only_run_entries(dir, why)) return false;
  const fs::path config = dir / "config.toml";
  std::ifstream in(config, std::ios::binary);
  std::string first;
  if (!fs::is_regular_file(config, ec) || fs::is_symlink(config, ec) || !std::getline(in, first) ||
      first.rfind(kRunConfigHeader, 0) != 0) {
    if (why) *why = "it has no config.toml written by atoll";
    return false;
  }
  return true;
}

// A folder create_run_folder() made and was killed in before config.toml
// landed: it holds nothing but the temporary file of that write.
bool is_unborn_run_folder(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec) || !fs::is_directory(dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_symlink() || !e.is_regular_file() || e.path().filename().string().rfind("config.toml.tmp.", 0) != 0)
      return false;
  return !ec;
}

void remove_run_folder(const fs::path& dir, const std::string& what) {
  std::string why;
  if (!is_run_folder(dir, &why))
    throw std::runtime_error("'" + dir.string() + "' is not an atoll run folder (" + why + "); " + what +
                             " only replaces run folders, so it was left as it was: choose another folder");
  fs::remove_all(dir);
}

fs::path create_run_folder(const Config& cfg, bool replace) {
  const fs::path dir = run_folder(cfg);
  if (cfg.model.kind == "torchscript" && !fs::is_regular_file(cfg.model.path))
    throw std::runtime_error("model.path '" + cfg.model.path + "' is not a file: save the module with " +
                             "torch.jit.script(module).save(path)");
  if (is_unborn_run_folder(dir)) fs::remove_all(dir);  // a start killed before its config.toml: start again
  if (fs::exists(dir) && !fs::is_empty(dir)) {
    if (!replace)
      throw std::runtime_error("run folder '" + dir.string() +
                               "' already exists; choose another --run.name or pass --run.overwrite=true");
    remove_run_folder(dir, "--run.overwrite=true");
  }
  fs::create_directories(dir);
  write_file_atomic((dir / "config.toml").string(), std::string(kRunConfigHeader) + "\n" + to_toml(cfg));
  if (cfg.model.kind == "torchscript") fs::copy_file(cfg.model.path, dir / kRunModuleFile);
  return dir;
}

void write_summary(const fs::path& dir, const RunSummary& s) {
  nlohmann::json summary = {{"final_val_loss", s.final_val_loss},
                            {"final_train_loss", s.final_train_loss},
                            {"task", s.task},
                            {"steps", s.steps},
                            {"workers", s.workers},
                            {"params", s.params},
                            {"wall_s", s.wall_seconds},
                            {"model_flops_per_s", s.model_flops_per_s},
                            {"sim_time_s", s.sim_seconds},
                            {"compute_utilisation", s.compute_utilisation},
                            {"bytes_sent_per_worker", s.bytes_sent_per_worker}};
  // Figures that may be undefined are written as null, never as NaN.
  auto maybe = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  // A language model is counted in tokens and has a perplexity; a classifier
  // or a regressor is counted in examples (a token of an image or a
  // regression target means nothing to its reader), a classifier with its
  // accuracy.
  if (s.task == "language") {
    summary["tokens_per_s"] = s.tokens_per_s;
    summary["tokens"] = s.steps * s.global_batch_tokens;
    summary["final_val_ppl"] = std::exp(s.final_val_loss);
  } else {
    summary["examples_per_s"] = s.examples_per_s;
    summary["examples"] = s.steps * s.global_batch_examples;
    if (s.task == "classification") summary["final_val_accuracy"] = maybe(s.final_val_accuracy);
  }
  summary["final_val_loss_se"] = maybe(s.final_val_loss_se);
  summary["final_val_loss_se_unit"] = s.final_val_loss_se_unit;
  summary["final_val_loss_se_clusters"] = s.final_val_loss_se_clusters;
  summary["final_eval"] = s.final_eval;
  summary["final_eval_examples"] = s.final_eval_examples;
  summary["final_eval_tokens"] = s.final_eval_tokens;
  summary["final_eval_s"] = s.final_eval_wall_seconds;
  summary["eval_s"] = s.eval_wall_seconds;
  summary["final_update_correlation"] = maybe(s.final_update_correlation);
  summary["final_disagreement"] = maybe(s.final_disagreement);
  if (s.intra_bytes_sent_per_worker >= 0) summary["intra_bytes_sent_per_worker"] = s.intra_bytes_sent_per_worker;
  if (!s.events.empty()) summary["end"] = nlohmann::json::parse(s.events.back());
  // Whole or not at all: summary.json marks a finished run (resume refuses
  // it), so a kill mid-write must not leave an empty or half file behind.
  write_file_atomic((dir / "summary.json").string(), summary.dump(2) + "\n");
}

std::vector<std::string> checkpoint_parts(const Config& cfg, int64_t rank) {
  if (rank > 0) return {worker_part(rank)};
  if (rank == 0) return {"driver", worker_part(0)};
  std::vector<std::string> parts = {"driver"};
  for (int64_t r = 0; r < cfg.strategy.workers; ++r) parts.push_back(worker_part(r));
  return parts;
}

int64_t find_resume_step(const Config& cfg, const fs::path& dir, const std::vector<std::string>& parts) {
  const fs::path config_path = dir / "config.toml";
  if (!fs::is_regular_file(config_path))
    throw std::runtime_error("cannot resume: '" + dir.string() + "' holds no run (no config.toml); start it without " +
                             "--run.resume");
  if (fs::exists(dir / "summary.json"))
    throw std::runtime_error("cannot resume: the run in '" + dir.string() + "' has finished (summary.json); " +
                             "start a new one with another --run.name, or replace it with --run.overwrite=true");
  Config started;
  try {
    started = load_config(config_path.string(), {});
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot resume: '" + config_path.string() + "' does not load: " + e.what());
  }
  const std::string now = trajectory_config(cfg), then = trajectory_config(started);
  if (now != then)
    throw std::runtime_error("cannot resume '" + dir.string() + "': it was started with other settings (" +
                             trajectory_difference(then, now, "when it started") +
                             "); resume with the same config and overrides");
  check_module_unchanged(cfg, dir);
  const CheckpointStore store(dir);
  std::vector<std::string> skipped;
  const int64_t step = store.latest_complete(parts, &skipped);
  if (step < 0) {
    std::string why;
    for (const auto& s : skipped) why += "\n  " + s;
    throw std::runtime_error("cannot resume '" + dir.string() + "': no complete checkpoint in " +
                             store.folder().string() + (why.empty() ? std::string(" (none written)") : ":" + why) +
                             "\nset run.checkpoint_every to write them, or start again with --run.overwrite=true");
  }
  // A checkpoint copied in from another run is refused before anything changes.
  for (const auto& part : parts) {
    const CheckpointRecords r = store.read(step, part);
    auto it = r.find("meta.config");
    if (it == r.end() || it->second.text != now)
      throw CheckpointError("cannot resume '" + dir.string() + "': " + store.file(step, part).string() +
                            " was written with other settings (" +
                            trajectory_difference(it == r.end() ? std::string() : it->second.text, now) + ")");
  }
  return step;
}

std::unique_ptr<MetricsLog> reopen_for_resume(const fs::path& dir, int64_t step) {
  const CheckpointStore store(dir);
  const CheckpointRecords r = store.read(step, "driver");
  auto size = [&](const std::string& key) {
    auto it = r.find("observer." + key);
    if (it == r.end() || it->second.kind != RecordKind::Integer || it->second.integer < 0)
      throw CheckpointError(store.file(step, "driver").string() + " lacks the metrics sizes");
    return static_cast<uint64_t>(it->second.integer);
  };
  auto log = std::make_unique<MetricsLog>(dir.string(), size("metrics.jsonl_bytes"), size("metrics.csv_bytes"));
  store.remove_after(step);
  return log;
}

bool holds_interrupted_run(const fs::path& dir) {
  return fs::is_regular_file(dir / "config.toml") && !fs::exists(dir / "summary.json");
}

int64_t latest_checkpoint(const Config& cfg, int64_t rank) {
  const std::vector<std::string> parts =
      rank >= 0 ? std::vector<std::string>{worker_part(rank)} : checkpoint_parts(cfg);
  return CheckpointStore(run_folder(cfg)).latest_complete(parts, nullptr);
}

StartPlan resolve_start(const Config& cfg, const std::string& problem, int64_t step) {
  StartPlan plan;
  const std::string& mode = cfg.run.resume;
  if (mode == "false") {
    plan.replace = cfg.run.overwrite;
    return plan;
  }
  const std::string why =
      !problem.empty() ? problem
                       : "cannot resume '" + run_folder(cfg).string() +
                             "': no checkpoint step is intact on every rank; start again with --run.overwrite=true";
  if (problem.empty() && step >= 0) {
    plan.resume = true;
    plan.step = step;
  } else if (mode == "true") {
    throw std::runtime_error(why);
  } else {  // auto: start again
    plan.why = why;
    plan.replace = cfg.run.overwrite || holds_interrupted_run(run_folder(cfg));
  }
  return plan;
}

StartPlan plan_start(const Config& cfg, int64_t rank) {
  if (cfg.run.resume == "false") return resolve_start(cfg, "", -1);
  std::string problem;
  int64_t step = -1;
  try {
    step = find_resume_step(cfg, run_folder(cfg), checkpoint_parts(cfg, rank));
  } catch (const std::exception& e) {
    if (cfg.run.resume == "true") throw;  // as it was thrown: the reason, with its type
    problem = e.what();
  }
  return resolve_start(cfg, problem, step);
}

}  // namespace atl
