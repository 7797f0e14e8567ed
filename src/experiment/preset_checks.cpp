// A preset's checks worded for RESULTS.md and report.html
// (preset_checks.h), and the options of a sweep's report.html.
#include "experiment/preset_checks.h"

#include <filesystem>
#include <stdexcept>
#include <utility>

#include "util/format.h"

namespace atl {
namespace fs = std::filesystem;

namespace {

// The text a check's preset gives for `outcome` ("" when none).
const std::string& preset_outcome_text(const SweepClaim& c, ClaimVerdict::Outcome outcome) {
  switch (outcome) {
    case ClaimVerdict::Holds:
      return c.holds;
    case ClaimVerdict::Fails:
      return c.fails;
    case ClaimVerdict::Equivalent:
      return c.equivalent;
    default:
      return c.inconclusive;
  }
}

}  // namespace

PresetRuns preset_runs(const SweepSpec& spec, const std::string& dir) {
  PresetRuns out;
  for (const auto& r : spec.runs) {
    const fs::path folder = fs::path(dir) / r.name;
    if (!fs::exists(folder / "summary.json")) {
      out.missing.push_back(r.name);
      continue;
    }
    // A run made before the preset changed does not count for the preset.
    if (const std::string diff = finished_run_difference(spec, r, dir); !diff.empty()) {
      out.stale.push_back(r.name + " (" + diff + ")");
      out.missing.push_back(r.name);
      continue;
    }
    out.counted.push_back(folder.string());
  }
  return out;
}

PresetChecks judge_preset(const SweepSpec& spec, const std::string& dir, bool every_run_counted) {
  PresetChecks out;
  if (!every_run_counted || spec.claims.empty()) {
    out.verdict = every_run_counted ? "no checks" : "not run";
    return out;
  }
  const SeedMetrics metrics = sweep_metrics(spec, dir);
  for (const auto& c : spec.claims) {
    const double effect = c.effect > 0 ? c.effect : spec.effect;
    const ClaimVerdict v = judge_claim(c.check, metrics, effect);
    out.held += v.outcome == ClaimVerdict::Holds;
    out.failed += v.outcome == ClaimVerdict::Fails;
    out.equivalent += v.outcome == ClaimVerdict::Equivalent;
    out.claims.push_back({c.text, c.check, outcome_name(v.outcome),
                          effect > 0 ? format_number("%.6g", effect) : std::string("not stated"), v.detail,
                          preset_outcome_text(c, v.outcome), v.difference, v.resolves});
  }
  const int checked = static_cast<int>(out.claims.size());
  out.verdict = out.held == checked  ? "reproduced"
                : out.held > 0       ? "partly reproduced"
                : out.failed > 0     ? "not reproduced"
                : out.equivalent > 0 ? "no difference as large as the effect"
                                     : "inconclusive";
  out.tally = std::to_string(out.held) + " of " + std::to_string(checked) + " checks hold, " +
              std::to_string(out.failed) + " fail, " + std::to_string(out.equivalent) + " equivalent, " +
              std::to_string(checked - out.held - out.failed - out.equivalent) + " inconclusive" +
              (spec.seeds < 2 && !spec.runs.empty() ? "; one seed per run gives no interval" : "");
  return out;
}

ReportOptions sweep_report_options(const SweepSpec& spec, const std::string& dir) {
  ReportOptions ro;
  ro.title = spec.id.empty() ? spec.title : spec.id + ": " + spec.title;
  if (ro.title.empty()) ro.title = spec.name;
  ro.subtitle = spec.paper_claim;
  ro.baseline = spec.baseline;
  ro.target_loss = spec.target_loss;
  ro.target_source = "target_loss in " + spec.preset + "'s [sweep]";
  // A preset without checks gets no Claims section (nothing to judge).
  if (spec.claims.empty()) return ro;
  try {
    PresetChecks checks = judge_preset(spec, dir, preset_runs(spec, dir).missing.empty());
    ro.claims = std::move(checks.claims);
    ro.verdict = checks.verdict;
    ro.verdict_tally = checks.tally;
  } catch (const std::invalid_argument& e) {
    // A --grid renames the runs (ddp -> ddp_<axis><value>), so the preset's
    // checks may name runs this sweep does not have: the finished sweep
    // still gets its report, which says why nothing was judged.
    ro.verdict = "not judged";
    ro.verdict_tally = e.what();
  }
  return ro;
}

}  // namespace atl
