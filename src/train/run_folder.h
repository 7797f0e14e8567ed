// A run folder's life: created for a new run (config.toml), resumed from its
// newest intact checkpoint, finished with summary.json. The one place that
// decides whether a run starts fresh or resumes (run.resume = false | true |
// auto), for simulated and real runs alike.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/train.h"
#include "train/metrics.h"

namespace atl {

// <out_dir>/<name>.
std::filesystem::path run_folder(const Config& cfg);

// The first line of every config.toml atoll writes into a run folder: what
// marks a folder as a run.
inline constexpr const char* kRunConfigHeader = "# resolved configuration of this run";

// Whether `dir` holds an atoll run and nothing else: its config.toml starts
// with kRunConfigHeader, and every entry is one atoll writes in a run folder
// (config.toml, metrics.jsonl, metrics.csv, summary.json, checkpoints/,
// timing/, model.safetensors, model.pt) or the temporary file of an atomic
// write that was interrupted (<name>.tmp...). Otherwise `why` (if given)
// says what is not atoll's. The only non-empty folders atoll ever deletes.
bool is_run_folder(const std::filesystem::path& dir, std::string* why = nullptr);
// Only the entries a run folder may hold (is_run_folder without the
// config.toml marker): a folder a run was killed in before it wrote it.
bool holds_only_run_entries(const std::filesystem::path& dir, std::string* why = nullptr);

// Empties `dir` for a new run, after is_run_folder: anything else is
// refused with what it holds and left as it was. `what` names the option
// that asked ("--run.overwrite=true", "--overwrite").
void remove_run_folder(const std::filesystem::path& dir, const std::string& what);

// runs/<name>/ with config.toml (written atomically). An existing non-empty
// folder is refused unless `replace`, and then only if it is a run folder
// (remove_run_folder).
std::filesystem::path create_run_folder(const Config& cfg, bool replace);
// summary.json from a finished run.
void write_summary(const std::filesystem::path& dir, const RunSummary& s);

// The checkpoint files of one step of a simulated run ("driver" and every
// worker's), or of real rank `rank` (its worker's, plus "driver" on rank 0).
std::vector<std::string> checkpoint_parts(const Config& cfg, int64_t rank = -1);

// An existing run folder to resume: checks that its config.toml matches
// cfg in every setting that shapes the trajectory, finds the newest
// checkpoint whose `parts` are complete, and returns its step. Throws with
// what is wrong and what to do; changes nothing on disk.
int64_t find_resume_step(const Config& cfg, const std::filesystem::path& dir, const std::vector<std::string>& parts);
// Opens the metrics of a resumed run at the sizes its checkpoint recorded and
// removes newer, unfinished checkpoint folders.
std::unique_ptr<MetricsLog> reopen_for_resume(const std::filesystem::path& dir, int64_t step);

// Whether the folder holds a run that started and did not finish
// (config.toml without summary.json): `auto` may replace it.
bool holds_interrupted_run(const std::filesystem::path& dir);

// The resume policy (run.resume, see plan_start() in train.h) applied to
// what is known of the run: `problem` says why the folder cannot be resumed
// ("" if it can), `step` is the newest checkpoint step every worker holds
// intact (-1: none). plan_start() and real runs (whose ranks pool what they
// hold) both decide here. Throws for `true` when the run cannot resume.
StartPlan resolve_start(const Config& cfg, const std::string& problem, int64_t step);

}  // namespace atl
