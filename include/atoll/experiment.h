// Experiments: a preset's [sweep] section (named runs x a grid), running it
// into runs/<sweep>/<run>/ resumably, the claims a preset checks, and
// docs/RESULTS.md generated from finished run folders.
//
// A preset is an ordinary config file (what `atoll train` runs) plus:
//
//   [sweep]
//   name = "r1_diloco"               # folder under run.out_dir; default: file stem
//   id = "R1"                        # reproduction target (ALGORITHMS.md section 9)
//   paper_claim = "DiLoCo N = 8 ..."  # the claim as the paper states it
//   scaled = "GPT 2x64, 600 steps"    # how it was scaled down
//   runs = ["ddp: strategy.name=ddp", "diloco: strategy.name=diloco"]
//   grid = ["diloco.inner_steps=20,50"]  # applied to runs whose name is listed
//                                       # after '@' ("key=v1,v2@diloco"), else all
//   quick = ["train.steps=40"]        # under --quick, applied before each run's own;
//                                     # "key=v@run,..." only to those runs, after
//                                     # their own (grid values still win)
//   changes = "..."                   # what changed since round one (RESULTS.md's summary)
//   baseline = "ddp"                  # the report's reference run
//   target_loss = 2.2                 # time-to-target column and claims: the loss
//                                     # the experiment sets out to reach (without it
//                                     # the report uses the baseline's at 90% of its run)
//   seeds = 3                         # every run repeated with run.seed, +1, +2
//                                     # (folders <run>_s1.._s3); --seeds=K overrides
//   effect = 0.01                     # the smallest difference the claims test
//                                     # for, in their own units (RESULTS.md says
//                                     # whether the intervals resolve it)
//   against = "diloco.inner_steps"   # a grid key: RESULTS.md adds the final loss
//                                     # against its values, a table and a chart
//                                     # (docs/img/<sweep>_loss_against_<leaf>.svg)
//   discussion = "..."               # what was measured and how to read it
//                                     # (RESULTS.md); never a verdict: the
//                                     # checks give that (a test holds it to it)
//   [[sweep.claim]]
//   text = "DiLoCo H = 20 within 2% of DDP"
//   check = "loss(diloco_h20) <= 1.02 * loss(ddp)"
//   effect = 0.01                     # optional: this check's own effect
//   holds = "..."                     # optional: what RESULTS.md says when the
//   fails = "..."                     # check has that outcome; the page prints
//   equivalent = "..."                # only the computed one (so prose never
//   inconclusive = "..."              # contradicts the verdict)
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/report.h"

namespace atl {

struct SweepRun {
  std::string name;                         // folder name under the sweep folder
  std::vector<std::string> overrides;       // section.key=value, applied after the preset
  std::string setting;                      // the name claims and tables use: name without "_s<k>"
  int64_t seed = 0;                         // this run's run.seed
  std::string family;                       // the runs entry it expands: its name before any grid suffix
  std::map<std::string, std::string> grid;  // the grid's value for each axis applied to it
};

struct SweepClaim {
  std::string text;   // the claim in words
  std::string check;  // an expression over run metrics (see evaluate_claim)
  double effect = 0;  // the smallest difference it tests for (0 = the sweep's effect)
  // What the page says under the check for each outcome ("" = nothing);
  // only the computed outcome's text is printed.
  std::string holds, fails, equivalent, inconclusive;
};

struct SweepSpec {
  std::string preset;  // path of the preset file
  std::string name;    // sweep folder name
  std::string id;      // "R1".. or "" for presets that reproduce nothing
  std::string title;   // one line
  std::string paper_claim;
  std::string scaled;  // how the preset was scaled down
  std::vector<SweepRun> runs;
  std::string baseline;    // reference run for "vs baseline"; "" = first run
  double target_loss = 0;  // 0 = none
  int64_t seeds = 1;       // K: each run repeated with K seeds (ALGORITHMS.md 9 asks K >= 3 for a verdict)
  double effect = 0;       // the smallest difference the claims test for (0 = not stated)
  std::vector<SweepClaim> claims;
  std::string discussion;  // verbatim into RESULTS.md under the verdict; free of verdicts
  std::string changes;     // what changed since the first round and why (RESULTS.md's summary table)
  std::string against;     // a grid key RESULTS.md draws the final loss against ("" = none)
  std::string command;     // how the sweep was asked for (RESULTS.md), set by load_sweep
};

// Reads the preset's [sweep] section, expands runs x grid (plus the extra
// grid entries "key=v1,v2[@run,...]" from the command line) and, when quick,
// appends the preset's quick overrides and "_quick" to the sweep name.
// `extra` overrides apply to every run. seeds > 0 overrides [sweep] seeds:
// with K > 1 seeds each run becomes K runs <name>_s1.._sK with run.seed =
// its own seed + 0..K-1 (with one seed the folder keeps the run's name, and
// that run is seed 1 of any larger sweep's). Every run's config is validated
// before this returns, so a bad key stops the sweep before any training.
// Throws std::invalid_argument naming the problem.
SweepSpec load_sweep(const std::string& preset, const std::vector<std::string>& extra_grid,
                     const std::vector<std::string>& extra, bool quick, int64_t seeds = 0);

struct SweepOptions {
  std::string exe;         // the atoll binary that trains each run
  std::string out_root;    // "" = the preset's run.out_dir; runs go to <out_root>/<name>/<run>/
  int64_t jobs = 1;        // runs at once (each gets cores / jobs threads)
  bool overwrite = false;  // re-run finished runs whose config changed
  bool reuse = true;       // copy a finished run with the same computation keys from a sweep folder beside this one
  bool quiet = false;      // no per-run output (tests)
};

struct SweepOutcome {
  std::string dir;  // the sweep folder
  std::vector<std::string> run_dirs;
  int64_t ran = 0, skipped = 0;
  int64_t copied = 0;   // finished runs copied from another sweep folder (SweepOptions::reuse)
  int64_t resumed = 0;  // of `ran`: interrupted runs continued from a checkpoint
};

// Runs every run that is not already finished with the same config (so an
// interrupted sweep resumes where it stopped). An unfinished folder from an
// interrupted run is resumed from its newest intact checkpoint if that was
// made with the same config, else replaced; a finished one with a different
// config is refused unless options.overwrite. Throws on the first failed run, naming it
// and its log.
// On SIGINT/SIGTERM each running run stops with a checkpoint, nothing new
// starts, and SweepInterrupted is thrown (the next call continues).
SweepOutcome run_sweep(const SweepSpec& spec, const SweepOptions& options);

// A sweep stopped by a signal; what() says how to continue.
struct SweepInterrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "" when the finished run <dir>/<run.name> was made with exactly the config
// the sweep asks for now (run.* bookkeeping aside); else the first key that
// differs, with both values. Throws if the folder is not a finished run.
std::string finished_run_difference(const SweepSpec& spec, const SweepRun& run, const std::string& dir);

// Final metrics of a finished run, by the names claims use.
// ttt is the simulated time to the sweep's target_loss (-1 without one); a
// run that never reached it is censored at its end (ttt = its simulated
// time, reached = false; report/target_time.h).
struct RunMetrics {
  double loss = 0, ppl = 0, bytes = 0, time = 0, corr = 1, util = 1, ttt = -1;
  // The summary's final worker agreement (ALGORITHMS.md 9; for methods with
  // outer syncs, the last measurement before a sync). NaN: not measured.
  double update_correlation = std::numeric_limits<double>::quiet_NaN();
  double disagreement = std::numeric_limits<double>::quiet_NaN();
  bool reached = true;  // ttt is the time the target was reached, not a lower bound
  int64_t seed = 0;     // run.seed: claims pair settings by it
};
// Per setting, the metrics of each of its finished seeds, in seed order
// (missing runs absent).
using SeedMetrics = std::map<std::string, std::vector<RunMetrics>>;
SeedMetrics sweep_metrics(const SweepSpec& spec, const std::string& dir);

// A claim judged over seeds (ALGORITHMS.md section 9): the check "left op
// right" is evaluated per seed (settings paired by run.seed) and the 95%
// Student-t interval of the paired difference left - right decides: for <
// and <= it holds when the interval lies below 0, fails when it lies above,
// and is inconclusive when it straddles 0 or there is no interval (one
// seed); > and >= mirror that. Refinements:
// - a check that names no run (a closed form) is a deterministic comparison;
//   so is a difference the same in every seed (a zero-width interval; equal
//   sides then hold for <= and >=, fail for < and >). Differences below
//   1e-12 of the sides count as 0.
// - a difference that is not finite in some seed is inconclusive, "not
//   finite (diverged)".
// - ttt of a seed that never reached the target is its run's end, a lower
//   bound: a decision that moving those times later could undo is
//   inconclusive, one it could not "holds/fails conservatively".
// - with an effect e > 0: the detail says whether the half-width is <= 0.7 e
//   (it "resolves an effect of e"); an otherwise inconclusive interval inside
//   (-e, +e) is Equivalent: no difference as large as e.
// - an inconclusive one says about how many seeds would decide it.
struct ClaimVerdict {
  enum Outcome { Holds, Fails, Inconclusive, Equivalent } outcome = Inconclusive;
  std::string detail;  // the check with mean values, the difference, its interval and n pairs
  int seeds = 0;       // seeds every named setting has (0 for a closed form)
  // left - right in short, for a summary: "+0.0399 ± 0.0149 (n=3)", "-0.01
  // exactly (n=3)", "-0.0167 (closed form)", "not finite", "+0.02 (one seed)".
  std::string difference;
  bool resolves = false;  // decided exactly, or a half-width <= 0.7 x the effect
};
const char* outcome_name(ClaimVerdict::Outcome o);  // holds | fails | inconclusive | equivalent
// Throws std::invalid_argument on a syntax error or an unknown setting.
ClaimVerdict judge_claim(const std::string& check, const SeedMetrics& runs, double effect);

// Evaluates a claim check: comparisons (<, <=, >, >=) of arithmetic (+ - * /,
// parentheses, numbers like 1e-3) over loss(run), ppl(run), bytes(run),
// time(run), corr(run), update_correlation(run), disagreement(run) (the
// summary's final worker agreement; an error if the run has none), util(run),
// ttt(run) (simulated seconds to target_loss, the run's end if never reached;
// +inf without a target_loss), abs(x), min(x, y), max(x, y) and
// copy_seconds(params, bytes_per_element, bits_per_second). Sets `detail` to
// the check with every call replaced by its value. Throws
// std::invalid_argument on a syntax error or an unknown run.
bool evaluate_claim(const std::string& check, const std::map<std::string, RunMetrics>& runs, std::string& detail);

// The sweep folder of a spec: <out_root>/<name>, out_root "" = the preset's
// run.out_dir.
std::string sweep_dir(const SweepSpec& spec, const std::string& out_root);

// The options of a sweep's report.html, for the finished sweep folder `dir`:
// the preset's id and title, paper claim, baseline and target_loss, and
// (when it states checks) its checks judged over the run folders with its
// verdict, worded exactly as RESULTS.md words them. Checks that cannot be
// judged (they name a run the sweep does not have, as after a --grid) leave
// the verdict "not judged" with the reason, rather than failing the report.
// The caller sets the network sliders.
ReportOptions sweep_report_options(const SweepSpec& spec, const std::string& dir);

// docs/RESULTS.md: for every preset (in order) its claim, command, a table
// of its settings (mean ± 95% interval over seeds) and a verdict from its
// claims (reproduced: all hold; partly: some hold; not reproduced: none
// holds and one fails; inconclusive: every check is; not run: a run is
// missing or was made with another config than the preset now says), then
// its discussion. Each check shows its effect and its outcome's text. A
// preset with `against` gets the final loss against that grid key, as a
// table and as a chart linked from img/ beside the page.
std::string results_markdown(const std::vector<SweepSpec>& specs, const std::string& out_root);
// Writes results_markdown() to `path` atomically (a reader never sees half a
// file), and its charts (SVG) into img/ beside it.
void write_results_markdown(const std::vector<SweepSpec>& specs, const std::string& out_root, const std::string& path);

}  // namespace atl
