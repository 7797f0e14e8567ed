// docs/RESULTS.md from the presets and their finished run folders: every
// figure and verdict comes from the runs, never from typing.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "atoll/experiment.h"
#include "atoll/report.h"
#include "report/groups.h"
#include "util/file_io.h"
#include "util/format.h"

namespace atl {
namespace fs = std::filesystem;

namespace {

struct Section {
  std::string verdict;  // reproduced | partly | not reproduced | not run
  std::string body;
};

Section render(const SweepSpec& spec, const std::string& out_root) {
  Section s;
  const std::string dir = sweep_dir(spec, out_root);
  std::vector<RunData> runs;
  std::vector<std::string> missing;
  std::vector<std::string> stale;
  for (const auto& r : spec.runs) {
    const fs::path folder = fs::path(dir) / r.name;
    if (!fs::exists(folder / "summary.json")) {
      missing.push_back(r.name);
      continue;
    }
    // A run made before the preset changed does not count for the preset.
    if (const std::string diff = finished_run_difference(spec, r, dir); !diff.empty()) {
      stale.push_back(r.name + " (" + diff + ")");
      missing.push_back(r.name);
      continue;
    }
    runs.push_back(load_run(folder.string()));
  }
  std::ostringstream o;
  o << "**Paper claim.** " << spec.paper_claim << "\n\n";
  if (!spec.scaled.empty()) o << "**Scaled down.** " << spec.scaled << "\n\n";
  o << "**Command.** `" << spec.command << "` (preset `" << spec.preset << "`, runs in `" << dir << "/`)\n\n";
  if (!runs.empty()) {
    const std::vector<RunGroup> groups = group_by_seed(runs);
    const RunGroup& base = reference_group(groups, spec.baseline);
    const RunGroup* ddp = ddp_group(groups);
    const GroupFigures fd = ddp ? group_figures(*ddp, spec.target_loss) : GroupFigures{};
    const double base_loss = group_figures(base, 0).loss.mean;
    std::string header = "| run | seeds | strategy | N | steps | final eval loss | perplexity | vs " + base.name +
                         " (paired) | sent per worker (MB) | reduction vs DDP | simulated time (s)";
    if (spec.target_loss > 0) header += " | time to loss " + format_number("%.3g", spec.target_loss) + " (s)";
    header += " | correlation |";
    o << header << "\n" << markdown_delimiter(header) << "\n";
    for (const auto& g : groups) {
      const RunData& r = *g.runs.front();
      const GroupFigures f = group_figures(g, spec.target_loss);
      std::string reduction = "—";
      if (ddp && fd.bytes_per_worker.mean > 0)
        reduction = f.bytes_per_worker.mean > 0
                        ? format_number("%.3g×", fd.bytes_per_worker.mean / f.bytes_per_worker.mean)
                        : "no traffic";
      std::string versus = "—";
      if (&g != &base) {
        const MeanInterval d = paired_loss_difference(g, base);
        versus = format_paired_difference(d, base_loss, "±");
        if (d.has_interval()) versus += " (" + difference_verdict(d) + ")";
      }
      o << "| " << g.name << " | " << f.seeds << " | " << r.strategy << " | " << workers_label(r) << " | " << r.steps
        << " | " << format_mean_interval(f.loss, 4) << " | " << format_mean_interval(f.ppl, 3) << " | " << versus
        << " | " << format_megabytes(f.bytes_per_worker.mean)
        << (f.bytes_per_worker.has_interval() && f.bytes_per_worker.half_width > 0
                ? " ± " + format_megabytes(f.bytes_per_worker.half_width)
                : std::string())
        << " | " << reduction << " | " << format_mean_interval(f.sim_seconds, 1);
      if (spec.target_loss > 0) {
        o << " | ";
        if (f.reached == 0)
          o << "never";
        else
          o << format_mean_interval(f.time_to_target, 1)
            << (f.reached < f.seeds ? " (" + std::to_string(f.reached) + " of " + std::to_string(f.seeds) + " seeds)"
                                    : "");
      }
      o << " | " << (r.has_correlation && r.workers > 1 ? format_number("%.4f", f.correlation.mean) : std::string("—"))
        << " |\n";
    }
    o << "\n";
    if (spec.seeds > 1)
      o << "Means over " << spec.seeds << " seeds ± the half-width of their 95% Student-t interval; differences "
        << "against " << base.name << " are paired by seed.\n\n";
  }
  if (!stale.empty()) {
    o << "Made with another config than the preset now gives, so not counted:";
    for (const auto& m : stale) o << " `" << m << "`";
    o << ".\n\n";
  }
  if (!missing.empty()) {
    o << "Not run yet (or not counted):";
    for (const auto& m : missing) o << " `" << m << "`";
    o << ".\n\n";
  }
  int held = 0, failed = 0, checked = 0;
  if (!spec.claims.empty() && missing.empty()) {
    const auto metrics = sweep_metrics(spec, dir);
    o << "**Checks** (computed from the run folders; a check holds or fails only when the 95% interval of its "
         "paired difference over seeds excludes 0):\n\n";
    for (const auto& c : spec.claims) {
      const ClaimVerdict v = judge_claim(c.check, metrics, c.effect > 0 ? c.effect : spec.effect);
      ++checked;
      held += v.outcome == ClaimVerdict::Holds;
      failed += v.outcome == ClaimVerdict::Fails;
      const std::string word = outcome_name(v.outcome);
      o << "- " << (v.outcome == ClaimVerdict::Holds ? word : "**" + word + "**") << ": " << c.text << " — `" << c.check
        << "`: " << v.detail << "\n";
    }
    o << "\n";
  }
  if (!missing.empty() || spec.claims.empty())
    s.verdict = missing.empty() ? "no checks" : "not run";
  else
    s.verdict = held == checked ? "reproduced"
                : held > 0      ? "partly reproduced"
                : failed > 0    ? "not reproduced"
                                : "inconclusive";
  o << "**Verdict: " << s.verdict << "**";
  if (checked)
    o << " (" << held << " of " << checked << " checks hold, " << failed << " fail, " << checked - held - failed
      << " inconclusive" << (spec.seeds < 2 ? "; one seed per run gives no interval" : "") << ")";
  o << "\n\n";
  if (!spec.discussion.empty()) o << spec.discussion << "\n\n";
  s.body = o.str();
  return s;
}

}  // namespace

std::string results_markdown(const std::vector<SweepSpec>& specs, const std::string& out_root) {
  std::vector<Section> sections;
  for (const auto& spec : specs) sections.push_back(render(spec, out_root));
  std::ostringstream o;
  o << "# Reproduction results (R1–R11)\n\n"
       "<!-- Generated by `build/atoll results` from the presets in configs/ and their run folders; "
       "do not edit by hand. -->\n\n"
       "Each section is one preset in `configs/`, a reproduction target from ALGORITHMS.md §9 scaled down to a "
       "2-core machine. The tables and verdicts are computed from the finished run folders by "
       "`build/atoll results`; each check is written in its preset, next to the claim, and judged over seeds: "
       "it holds when the 95% Student-t interval of its paired difference lies on its side of 0, fails when it "
       "lies on the other, and is *inconclusive* otherwise (also with one seed, which gives no interval). "
       "Verdict: *reproduced* when every check holds, *partly* when some do, *not reproduced* when none does "
       "and one fails, *inconclusive* when every check is. Other measured tables "
       "(earlier experiment scripts, real runs, network checks) are in [MEASUREMENTS.md](MEASUREMENTS.md); "
       "speed figures in [BENCHMARKS.md](BENCHMARKS.md).\n\n"
       "| target | experiment | verdict |\n|---|---|---|\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string anchor = specs[i].id.empty() ? specs[i].name : specs[i].id;
    o << "| " << anchor << " | " << specs[i].title << " | " << sections[i].verdict << " |\n";
  }
  o << "\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    o << "## " << (specs[i].id.empty() ? "" : specs[i].id + ": ") << specs[i].title << "\n\n" << sections[i].body;
  }
  return o.str();
}

void write_results_markdown(const std::vector<SweepSpec>& specs, const std::string& out_root, const std::string& path) {
  write_file_atomic(path, results_markdown(specs, out_root));
}

}  // namespace atl
