// docs/RESULTS.md from the presets and their finished run folders: every
// figure and verdict comes from the runs, never from typing.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "atoll/experiment.h"
#include "atoll/report.h"

namespace atl {
namespace fs = std::filesystem;

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string megabytes(double bytes) {
  if (bytes <= 0) return "0";
  const double mb = bytes / 1e6;
  return mb >= 100 ? fmt("%.0f", mb) : mb >= 1 ? fmt("%.1f", mb) : fmt("%.3g", mb);
}

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
    const RunData* base = &runs.front();
    for (const auto& r : runs)
      if (r.name == spec.baseline) base = &r;
    const RunData* ddp = nullptr;
    for (const auto& r : runs)
      if (r.strategy == "ddp" && !ddp) ddp = &r;
    o << "| run | strategy | N | steps | final eval loss | vs " << base->name
      << " | sent per worker (MB) | reduction vs DDP | simulated time (s)";
    if (spec.target_loss > 0) o << " | time to loss " << fmt("%.3g", spec.target_loss) << " (s)";
    o << " | correlation |\n|---|---|---|---|---|---|---|---|---|" << (spec.target_loss > 0 ? "---|" : "")
      << "\n";
    for (const auto& r : runs) {
      std::string reduction = "—";
      if (ddp && ddp->bytes_sent_per_worker > 0)
        reduction = r.bytes_sent_per_worker > 0 ? fmt("%.3g×", ddp->bytes_sent_per_worker / r.bytes_sent_per_worker)
                                                : "no traffic";
      o << "| " << r.name << " | " << r.strategy << " | " << r.workers << " | " << r.steps << " | "
        << fmt("%.4f", r.final_val_loss) << " | "
        << (&r == base ? std::string("—") : fmt("%+.2f%%", 100 * (r.final_val_loss / base->final_val_loss - 1)))
        << " | " << megabytes(r.bytes_sent_per_worker) << " | " << reduction << " | " << fmt("%.1f", r.sim_seconds);
      if (spec.target_loss > 0) {
        const double t = time_to_loss(r, spec.target_loss);
        o << " | " << (t < 0 ? std::string("never") : fmt("%.1f", t));
      }
      o << " | " << (r.has_correlation && r.workers > 1 ? fmt("%.4f", r.final_correlation) : std::string("—"))
        << " |\n";
    }
    o << "\n";
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
  int held = 0, checked = 0;
  if (!spec.claims.empty() && missing.empty()) {
    const auto metrics = sweep_metrics(spec, dir);
    o << "**Checks** (computed from the run folders):\n\n";
    for (const auto& c : spec.claims) {
      std::string detail;
      const bool ok = evaluate_claim(c.check, metrics, detail);
      ++checked;
      held += ok;
      o << "- " << (ok ? "holds" : "**fails**") << ": " << c.text << " — `" << c.check << "`: " << detail << "\n";
    }
    o << "\n";
  }
  if (!missing.empty() || spec.claims.empty())
    s.verdict = missing.empty() ? "no checks" : "not run";
  else
    s.verdict = held == checked ? "reproduced" : held == 0 ? "not reproduced" : "partly reproduced";
  o << "**Verdict: " << s.verdict << "**";
  if (checked) o << " (" << held << " of " << checked << " checks hold)";
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
       "`build/atoll results`; each check is written in its preset, next to the claim. Verdict: *reproduced* "
       "when every check holds, *partly* when some do, *not reproduced* when none do. Other measured tables "
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

}  // namespace atl
