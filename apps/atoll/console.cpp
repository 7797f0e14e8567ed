// What a training command prints: the model line at start, the progress
// line, and the summary when the run ends or stops.
#include "console.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace {

std::string format_duration(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  }
  return buf;
}

std::string format_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", b, units[u]);
  return buf;
}

// One number through a printf format ("-" for NaN: not measured or undefined).
std::string number_text(const char* format, double v) {
  if (!std::isfinite(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

}  // namespace

atl::TrainHooks progress_hooks(const atl::Config& cfg) {
  atl::TrainHooks hooks;
  const bool live = cfg.run.progress && isatty(STDOUT_FILENO);
  const int64_t plain_every = std::max<int64_t>(1, cfg.train.steps / 10);
  hooks.progress = [live, plain_every, last_plain = int64_t(-1)](const atl::ProgressInfo& p) mutable {
    char line[400];
    std::string corr = p.correlation >= -1 ? " | corr " + std::to_string(p.correlation).substr(0, 6) : "";
    // An evaluation's line also shows its standard error.
    std::string val = p.val_loss >= 0 ? std::to_string(p.val_loss).substr(0, 6) : "-";
    if (p.is_eval && std::isfinite(p.val_loss_se)) val += " ±" + number_text("%.4f", p.val_loss_se);
    // Agreement of the updates (ALGORITHMS.md 9): the figures that move when workers drift apart.
    if (p.correlation >= -1)
      corr += " | upd corr " + number_text("%.3f", p.update_correlation) + " | disagree " +
              number_text("%.3g", p.disagreement);
    std::snprintf(line, sizeof line,
                  "step %lld/%lld | loss %s | val %s | %.0f %s | sim %s | sent/worker %s%s | %s elapsed, ETA %s",
                  (long long)p.step, (long long)p.total_steps,
                  p.step > 0 ? (std::to_string(p.loss).substr(0, 6)).c_str() : "-", val.c_str(),
                  p.in_tokens ? p.tokens_per_s : p.examples_per_s, p.in_tokens ? "tok/s" : "ex/s",
                  format_duration(p.sim_time_s).c_str(), format_bytes(p.bytes_sent_per_worker).c_str(), corr.c_str(),
                  format_duration(p.elapsed_s).c_str(), format_duration(p.eta_s).c_str());
    if (live) {
      std::printf("\r\033[K%s", line);
      if (p.is_eval || p.step == p.total_steps) std::printf("\n");
      std::fflush(stdout);
    } else if (p.is_eval || p.step / plain_every != last_plain || p.step == p.total_steps) {
      last_plain = p.step / plain_every;
      std::printf("%s\n", line);
      std::fflush(stdout);
    }
  };
  // The model line: its parameters and the training FLOPs the run charges,
  // with where they come from (counted for a TorchScript module).
  hooks.start = [](const atl::StartInfo& s) {
    std::printf("%s\n", s.summary.c_str());
    std::fflush(stdout);
  };
  return hooks;
}

void print_done(const atl::RunSummary& s) {
  if (s.stopped_at >= 0) {
    std::printf("stopped after step %lld%s; checkpoint: %s\ncontinue with the same command and --resume\n",
                (long long)s.stopped_at, s.stopped_by_signal ? " (signal)" : " (run.stop_at)",
                s.checkpoint.empty() ? "(none: no run folder)" : s.checkpoint.c_str());
    return;
  }
  // A language model in tokens with its perplexity; a classifier or a
  // regressor in examples, a classifier with its accuracy.
  const bool in_tokens = s.task == "language";
  std::string quality;
  if (in_tokens) quality = " (ppl " + number_text("%.3f", std::exp(s.final_val_loss)) + ")";
  if (s.task == "classification") quality = " (accuracy " + number_text("%.2f", 100 * s.final_val_accuracy) + "%)";
  const double seen = double(s.steps) * double(in_tokens ? s.global_batch_tokens : s.global_batch_examples);
  std::printf(
      "done: final val loss %.4f%s, train loss %.4f, %lld params, trained on %.4g %s, %.0f %s, %.3g model FLOP/s, "
      "wall %s, simulated %s, utilisation %.1f%%, sent per worker %s\nrun folder: %s\n",
      s.final_val_loss, quality.c_str(), s.final_train_loss, (long long)s.params, seen,
      in_tokens ? "tokens" : "examples", in_tokens ? s.tokens_per_s : s.examples_per_s,
      in_tokens ? "tok/s" : "examples/s", s.model_flops_per_s, format_duration(s.wall_seconds).c_str(),
      format_duration(s.sim_seconds).c_str(), 100 * s.compute_utilisation,
      format_bytes(s.bytes_sent_per_worker).c_str(), s.run_dir.c_str());
  // How far to trust the final loss, and what evaluating it cost.
  const bool images = s.final_eval_tokens == s.final_eval_examples;
  const std::string covered = !in_tokens ? std::to_string(s.final_eval_examples) + (images ? " images" : " examples")
                                         : std::to_string(s.final_eval_examples) + " windows, " +
                                               std::to_string(s.final_eval_tokens) + " tokens";
  // What the standard error treats as independent (src/train/evaluation.h).
  const std::string unit = !in_tokens ? (images ? " images" : " examples") : " windows";
  const std::string se_over = s.final_val_loss_se_unit == "document"
                                  ? " (clustered by " + std::to_string(s.final_val_loss_se_clusters) + " documents)"
                                  : " (over " + std::to_string(s.final_val_loss_se_clusters) + unit + ")";
  std::printf(
      "evaluation: final on %s (%s), standard error %s%s; took %s = %.1f%% of the run's wall time "
      "(all evaluations and agreement measurements: %.1f%%)\n",
      s.final_eval != "full" ? "the fixed sample"
      : images               ? "the whole test split"
                             : "the whole validation split",
      covered.c_str(), number_text("%.4f", s.final_val_loss_se).c_str(), se_over.c_str(),
      format_duration(s.final_eval_wall_seconds).c_str(),
      s.wall_seconds > 0 ? 100 * s.final_eval_wall_seconds / s.wall_seconds : 0.0,
      s.wall_seconds > 0 ? 100 * std::min(1.0, s.eval_wall_seconds / s.wall_seconds) : 0.0);
  if (std::isfinite(s.final_update_correlation) || std::isfinite(s.final_disagreement))
    std::printf("worker agreement at the end: update correlation %s, relative disagreement %s\n",
                number_text("%.4f", s.final_update_correlation).c_str(),
                number_text("%.4g", s.final_disagreement).c_str());
  if (s.comm_wall_seconds >= 0)
    std::printf("communication per worker: measured %.3f s, network model %.3f s\n", s.comm_wall_seconds,
                s.network_model_seconds);
}
