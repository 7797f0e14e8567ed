// Training: the worker loop shared by both drivers, the simulate() driver
// (N worker threads in one process), evaluation, metrics and run folders.
//
// Holds no method-specific branches: a Strategy does the method's math.
// Thread-safety: train() and simulate() are re-entrant; they start and join
// their own worker threads.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/dist.h"

namespace atl {

// Shown on the terminal by the CLI (called on one thread at log steps).
struct ProgressInfo {
  int64_t step = 0, total_steps = 0;
  double loss = 0;            // mean train loss over workers since the last report
  double val_loss = -1;       // latest evaluation (< 0: none yet)
  double tokens_per_s = 0;    // all workers, wall clock
  double examples_per_s = 0;  // the same in examples (sequences, images)
  bool in_tokens = true;      // a language model (counted in tokens); else counted in examples
  double elapsed_s = 0, eta_s = 0;
  double sim_time_s = 0;  // simulated wall-clock of the slowest worker
  double bytes_sent_per_worker = 0;
  double correlation = -2;  // latest mean pairwise parameter correlation (< -1: none yet)
  // Latest worker agreement (ALGORITHMS.md 9): correlation of the updates
  // from the initial model and relative disagreement; NaN: none (yet).
  double update_correlation = std::numeric_limits<double>::quiet_NaN();
  double disagreement = std::numeric_limits<double>::quiet_NaN();
  double val_loss_se = std::numeric_limits<double>::quiet_NaN();  // of the evaluation this report follows
  bool is_eval = false;                                           // this report follows an evaluation
};

// What the run trains, shown by the CLI as it starts (also when it resumes).
struct StartInfo {
  int64_t params = 0;
  double flops_per_example = 0;  // training FLOPs (forward + backward) the run charges per example
  std::string flops_source;      // formula | model.flops_per_sample | counted
  std::string summary;           // one line: parameters, FLOPs and where they come from
};

struct TrainHooks {
  std::function<void(const ProgressInfo&)> progress;
  std::function<void(const StartInfo&)> start;  // called once, on the leader, before the first step
};

struct RunSummary {
  std::string run_dir;  // empty when no run folder was written
  int64_t steps = 0;
  int64_t workers = 0;
  int64_t params = 0;
  double final_train_loss = 0;  // mean over workers, last log window
  double final_val_loss = 0;    // evaluation at the end
  // What the model learns (train/task.h): "language" (counted in tokens,
  // with a perplexity), "classification" (examples, with an accuracy) or
  // "regression" (examples).
  std::string task = "language";
  // Classification: the share of the final evaluation's examples whose
  // highest logit is their label; NaN for other tasks.
  double final_val_accuracy = std::numeric_limits<double>::quiet_NaN();
  int64_t global_batch_tokens = 0;    // per step, all workers
  int64_t global_batch_examples = 0;  // per step, all workers
  // Its standard error (src/train/evaluation.h); NaN if unknown. Clustered
  // by document for token data with document starts (unit "document"),
  // else over examples: windows, images, rows (unit "example"); clusters:
  // how many documents (or examples) it was computed over.
  double final_val_loss_se = std::numeric_limits<double>::quiet_NaN();
  std::string final_val_loss_se_unit;  // "document" | "example" ("" before the final evaluation)
  int64_t final_val_loss_se_clusters = 0;
  std::string final_eval;              // "full" (whole validation split) | "sample" (train.final_eval)
  int64_t final_eval_examples = 0;     // windows (images) the final evaluation covered
  int64_t final_eval_tokens = 0;       // tokens (images) it covered
  double final_eval_wall_seconds = 0;  // wall time of the final evaluation
  double eval_wall_seconds = 0;        // every evaluation and agreement measurement of the run
  // Worker agreement at the last step (NaN: one worker, not measured, or undefined).
  double final_update_correlation = std::numeric_limits<double>::quiet_NaN();
  double final_disagreement = std::numeric_limits<double>::quiet_NaN();
  double wall_seconds = 0;
  double tokens_per_s = 0;                  // all workers
  double examples_per_s = 0;                // all workers
  double model_flops_per_s = 0;             // tokens_per_s * flops per token
  double sim_seconds = 0;                   // simulated time of the slowest worker
  double compute_utilisation = 1;           // mean over workers
  double bytes_sent_per_worker = 0;         // with islands: over the wide-area links between islands
  double intra_bytes_sent_per_worker = -1;  // islands: over the links inside an island (< 0: no islands)
  double network_model_seconds = 0;         // per worker: the network model's time for its ops
  double comm_wall_seconds = -1;            // per worker, measured (real runs; < 0 when simulated)
  std::vector<std::string> events;          // every metrics event as one JSON line
  int64_t stopped_at = -1;                  // >= 0: stopped early (signal or run.stop_at) after this step
  std::string checkpoint;                   // the checkpoint folder written when it stopped early
  bool stopped_by_signal = false;           // SIGINT/SIGTERM rather than run.stop_at
};

// Runs cfg end to end: creates runs/<name>/ (refusing to replace an existing
// folder unless cfg.run.overwrite), writes config.toml, metrics.jsonl,
// metrics.csv and summary.json. Throws on any error; the first worker error
// ends the whole simulation.
RunSummary train(const Config& cfg, const TrainHooks& hooks = {});

// The newest checkpoint step of cfg's run folder whose files are intact:
// all of them (rank < 0, a simulation) or rank `rank`'s own; -1 if none.
int64_t latest_checkpoint(const Config& cfg, int64_t rank = -1);

// How a run will start, by the resume policy (run.resume):
//   false  a new run; an existing folder is refused unless run.overwrite;
//   true   continue the folder's run from its newest intact checkpoint, or fail
//          saying why (no checkpoint, other settings, finished...);
//   auto   continue when that is possible; otherwise start again, replacing
//          an interrupted run's folder (config.toml without summary.json).
// `rank` >= 0: as real rank `rank` sees it (its own checkpoint files).
// Changes nothing on disk; train() and train_distributed() decide the same.
struct StartPlan {
  bool resume = false;
  int64_t step = -1;     // resume: the checkpoint step it continues after
  bool replace = false;  // a fresh start that empties the existing folder first
  std::string why;       // auto starting afresh: why it could not resume
};
StartPlan plan_start(const Config& cfg, int64_t rank = -1);

// A job started by a launcher (src/train/job_start.cpp):
// A real run has one worker per rank, so strategy.workers follows the job's
// world size unless `overrides` set it; returns the overrides to load.
std::vector<std::string> with_one_worker_per_rank(std::vector<std::string> overrides, const DistOptions& dist);
// A job restarted by `atoll launch --max-restarts` or torchrun
// (TORCHELASTIC_RESTART_COUNT > 0) continues from its newest complete
// checkpoint, or starts over when it has none: run.resume = false becomes
// auto. Returns the line to print ("restart 2: resuming from the checkpoint
// of step 300"), empty when this is no restart or `rank` > 0 (another host's
// ranks may not see the run folder). `rank` -1: a simulated run.
std::string resume_after_restart(Config& cfg, int64_t rank);

// The same run with no run folder (metrics only in RunSummary::events).
RunSummary simulate(const Config& cfg, const TrainHooks& hooks = {});

// Learning rate at step t (0-based): linear warm-up to cfg.lr over
// warmup_steps, then cosine decay to min_lr at total_steps (or constant).
double learning_rate(const OptimConfig& cfg, int64_t t, int64_t total_steps);

// One rank of a real run of cfg (strategy.workers must equal the world size):
// start-up checks (same config, same world size on every rank; rank 0 can
// create the run folder), then the shared worker loop; rank 0 writes the run
// folder with every rank's statistics gathered into it. Throws on any error,
// naming a lost or failed rank.
RunSummary train_distributed(const Config& cfg, const DistOptions& opts, const TrainHooks& hooks = {});

}  // namespace atl
