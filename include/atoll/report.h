// Report: run folders -> comparison tables and the HTML report. Never
// re-runs training.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace atl {

// A Markdown table comparing run folders (each holding summary.json and
// config.toml), one row per setting (runs differing only in run.seed are its
// seeds): strategy, workers, steps, final validation loss (mean ± 95%
// interval over seeds), its paired difference against the first setting,
// bytes sent per worker, ratio of bytes to the first, simulated time and
// compute utilisation; with target_loss > 0 also the simulated time to that
// loss (a seed that never reaches it censored at its end: "≥ T (k of K
// reached)"). Significance against the first is Holm-adjusted when several
// settings are compared (a note says so). Throws naming a folder that is not
// a finished run.
std::string compare_runs(const std::vector<std::string>& run_dirs, double target_loss = 0);

// Number formatting shared by the tables (Markdown and HTML).
// Bytes as megabytes with about three significant digits ("0" for none).
std::string format_megabytes(double bytes);

// One finished run folder, as the report and the claims read it.
struct RunData {
  std::string dir, name, strategy;
  int64_t workers = 1, steps = 0, params = 0;
  int64_t global_batch_tokens = 0;  // tokens per step over all workers (start event)
  // What the model learns (start event; runs made before it was recorded:
  // from model.kind and model.loss): "language" (a loss per token, counted
  // in tokens, with a perplexity), "classification" (one class per example,
  // counted in examples, with an accuracy) or "regression" (examples, the
  // loss alone).
  std::string task = "language";
  int64_t global_batch_examples = 0;  // examples per step over all workers (0: not recorded)
  // Classification: the share of evaluated examples whose highest logit is
  // their label, at the final evaluation; NaN otherwise or when not recorded.
  double final_val_accuracy = std::numeric_limits<double>::quiet_NaN();
  // Islands (start event): I islands of D devices and the exchange; 0 without.
  int64_t islands = 0, devices_per_island = 1;
  std::string exchange;
  // Islands: bytes each worker sent inside its island (bytes_sent_per_worker
  // is then what crossed the wide-area links); < 0 without islands.
  double intra_bytes_sent_per_worker = -1;
  // The network model's time per worker (end event): all of it, and the
  // part on the links inside the islands.
  double network_seconds = 0, intra_network_seconds = 0;
  double final_val_loss = 0, bytes_sent_per_worker = 0, sim_seconds = 0, utilisation = 1;
  double bytes_sent_total = 0;   // all workers (the ledger's per-worker sums)
  double final_correlation = 1;  // 1 for one worker or when never logged
  bool has_correlation = false;
  // Worker agreement at the end (ALGORITHMS.md 9); NaN for one worker, runs
  // made before it was logged, or when undefined.
  double final_update_correlation = std::numeric_limits<double>::quiet_NaN();
  double final_disagreement = std::numeric_limits<double>::quiet_NaN();
  // Standard error of final_val_loss (src/train/evaluation.h); NaN if not
  // recorded. Its unit: "document" (clustered by document) or "example";
  // "" for runs made before it was recorded (those are over examples).
  double final_val_loss_se = std::numeric_limits<double>::quiet_NaN();
  std::string final_val_loss_se_unit;
  double wall_seconds = 0;
  // Evaluations, in order: step, validation loss, bytes sent per worker and
  // simulated seconds at that evaluation.
  std::vector<double> eval_step, eval_loss, eval_bytes, eval_time;
  std::vector<double> corr_step, corr;  // mean pairwise parameter correlation
  // At the same steps: update correlation and relative disagreement (NaN
  // where undefined, e.g. before the workers moved).
  std::vector<double> update_corr, disagreement;
  std::map<std::string, std::string> config;  // "section.key" -> TOML value, run.* bookkeeping left out
};

// Whether a run is counted in tokens and has a perplexity (a language
// model), rather than in examples.
bool counts_tokens(const RunData& run);

// "8", or "4x2 leader" for 4 islands of 2 devices with leader exchange.
std::string workers_label(const RunData& run);
// A note on the link classes under a table when any run has islands, else
// "": per setting (its name and one of its runs; seeds move the same bytes).
std::string islands_note(const std::vector<std::pair<std::string, const RunData*>>& settings);

// Reads summary.json, metrics.jsonl and config.toml. Throws
// std::runtime_error naming the folder when it is not a finished run or a
// file is malformed.
RunData load_run(const std::string& dir);
// The same from the three files' contents (a retimed run held in memory).
// `config_toml` absent: the folder has none (an error, raised after the metrics are read).
RunData parse_run(const std::string& dir, const std::string& summary_json, const std::string& metrics_jsonl,
                  const std::optional<std::string>& config_toml);

// The run a table compares against: the one named `name`, else the first
// DDP run, else the first. Throws std::invalid_argument for an unknown name.
const RunData& reference_run(const std::vector<RunData>& runs, const std::string& name);
// The first DDP run (for "communication reduction vs DDP"), or nullptr.
const RunData* ddp_run(const std::vector<RunData>& runs);

// Simulated seconds at the first evaluation after step 0 with loss <= target;
// < 0 if none.
double time_to_loss(const RunData& run, double target);

// One check of a preset's claims as the report shows it. The sweep judges
// the check (experiment/, above report) and words it as RESULTS.md does;
// the page only escapes and places these strings.
struct ReportClaim {
  std::string text;     // the claim in words
  std::string check;    // its expression ("loss(diloco) <= 1.02 * loss(ddp)")
  std::string outcome;  // holds | fails | equivalent | inconclusive
  std::string effect;   // the effect it tests for ("0.01", or "not stated")
  // The check with its means, the paired difference, its 95% interval and n
  // pairs, or "decided exactly" (claims.h's ClaimVerdict::detail).
  std::string figures;
  std::string prose;       // the preset's text for the computed outcome ("" = none)
  std::string difference;  // left - right in short ("+0.0399 ± 0.0149 (n=3)"; ClaimVerdict::difference)
  bool resolves = false;   // decided exactly, or a half-width <= 0.7 x the effect
};

struct ReportOptions {
  std::string title = "atoll report";
  std::string subtitle;  // one line under the title ("" = none)
  std::string baseline;  // run name the table compares against; "" = the DDP run, else the first
  // The loss "time to loss" is measured at; 0 = the baseline's at 90% of its
  // run (choose_target_loss). `target_source` says where a given one came
  // from, for the page ("--target-loss", a preset's [sweep] target_loss).
  double target_loss = 0;
  std::string target_source = "--target-loss";
  // The "What-if network" sliders: bandwidth and latency over a grid
  // (whatif.h's default grids, 11 x 5 points) that retime, in the page, the
  // wall-clock chart and the table's time columns, plus a crossover chart of
  // time to target against bandwidth. Costs one retime per run and grid
  // point (55 per run) when the page is built; off here so library callers
  // and tests stay fast (atoll report and atoll sweep turn it on). Runs
  // without timing traces get no sliders.
  bool network_sliders = false;
  // Long runs make the grid slow (a replay costs about 20 us per worker and
  // step here): above this many replayed worker-steps (sum over runs of
  // steps x workers x 55) the panel says so instead of building; 0 = no limit.
  double network_sliders_budget = 2e7;
  // A preset's checks, judged over these runs (atoll sweep): a "Claims"
  // section under the summary table, with the preset's verdict ("partly
  // reproduced") and its tally ("2 of 3 checks hold, ..."). No checks and no
  // verdict (atoll report on plain run folders): no section.
  std::vector<ReportClaim> claims;
  std::string verdict, verdict_tally;
};

// The loss the report's "time to loss" is measured at, and why that one:
//   given     options.target_loss > 0 (a preset's [sweep] target_loss, or
//             --target-loss): what the experiment set out to reach;
//   baseline  else the baseline setting's eval loss at its last evaluation
//             after step 0 and at or before 90% of its steps (the highest
//             over its seeds, so each of them reaches it): a loss the
//             reference reaches late in its run, so the column tells who
//             gets there sooner and who does not get there at all;
//   final     the baseline has no such evaluation: its final eval loss (the
//             highest over its seeds).
struct TargetLoss {
  enum Rule { Given, Baseline, BaselineFinal };
  Rule rule = Given;
  double value = 0;
  std::string why;  // the rule in words, naming the source or the setting and step
};
TargetLoss choose_target_loss(const std::vector<RunData>& runs, const ReportOptions& options);
// A target loss as the report prints it: "2.437" (three decimals), or four
// significant digits below 1 ("0.008125": a regression's small losses).
std::string format_target_loss(double loss);

// One self-contained HTML page (Chart.js inlined, no network needed): eval
// loss against steps, bytes sent (log axis) and simulated time; correlation
// against steps; the workers' update correlation and relative disagreement
// against steps; a summary table; a preset's claims (options.claims); the
// config keys that differ between runs;
// with options.network_sliders, the what-if network panel.
std::string html_report(const std::vector<RunData>& runs, const ReportOptions& options);

// Loads the folders and writes html_report to out_path atomically (a
// temporary file renamed into place); returns the target loss the page used
// (for the console). Throws naming a bad folder.
TargetLoss write_html_report(const std::vector<std::string>& run_dirs, const std::string& out_path,
                             const ReportOptions& options);

}  // namespace atl
