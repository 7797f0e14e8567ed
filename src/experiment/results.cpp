// docs/RESULTS.md from the presets and their finished run folders: every
// figure and verdict comes from the runs, never from typing.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "atoll/experiment.h"
#include "atoll/report.h"
#include "experiment/loss_against.h"
#include "experiment/preset_checks.h"
#include "report/figure_text.h"
#include "report/groups.h"
#include "report/target_time.h"
#include "util/file_io.h"
#include "util/format.h"

namespace atl {

namespace {

struct Section {
  std::string verdict;  // reproduced | partly | not reproduced | not run
  std::string body;
  // The summary table's cells: "2 hold, 2 fail"; the first check's
  // difference; "3 of 4 (e = 0.02)". "—" when nothing was judged.
  std::string tally = "—", first_check = "—", resolved = "—";
  LossAgainstFigure against;  // the loss against the preset's `against` key (empty without one)
};

// The page and the charts it links (file name under img/ -> SVG).
struct Page {
  std::string markdown;
  std::vector<std::pair<std::string, std::string>> charts;
};

// "2 hold, 1 fails, 1 inconclusive": the outcomes that occur.
std::string tally_cell(const PresetChecks& c) {
  const int total = static_cast<int>(c.claims.size());
  const int inconclusive = total - c.held - c.failed - c.equivalent;
  std::string cell;
  auto add = [&](int n, const char* one, const char* many) {
    if (n > 0) cell += (cell.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
  };
  add(c.held, "holds", "hold");
  add(c.failed, "fails", "fail");
  add(c.equivalent, "equivalent", "equivalent");
  add(inconclusive, "inconclusive", "inconclusive");
  return cell.empty() ? "—" : cell;
}

// Megabytes with the interval only where it shows at the mean's last digit
// (figure_text.h: no "130 ± 1.2e-05").
std::string megabytes_text(const MeanInterval& bytes) {
  if (!(bytes.mean > 0)) return format_megabytes(bytes.mean);
  MeanInterval mb = bytes;
  mb.mean /= 1e6;
  mb.half_width /= 1e6;
  const FigureFormat f = mb.mean >= 100 ? FigureFormat{FigureFormat::Decimals, 0}
                         : mb.mean >= 1 ? FigureFormat{FigureFormat::Decimals, 1}
                                        : FigureFormat{FigureFormat::Significant, 3};
  const FigureText t = figure_text(mb, f);
  return format_megabytes(bytes.mean) + (t.interval.empty() ? "" : " ± " + t.interval);
}

Section render(const SweepSpec& spec, const std::string& out_root) {
  Section s;
  const std::string dir = sweep_dir(spec, out_root);
  const PresetRuns counted = preset_runs(spec, dir);
  const std::vector<std::string>& missing = counted.missing;
  const std::vector<std::string>& stale = counted.stale;
  std::vector<RunData> runs;
  for (const auto& folder : counted.counted) runs.push_back(load_run(folder));
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
    const std::vector<std::string> verdicts = versus_verdicts(groups, base);
    bool censored = false;
    std::string header = "| run | seeds | strategy | N | steps | final eval loss | perplexity | vs " + base.name +
                         " (paired) | sent per worker (MB) | reduction vs DDP | simulated time";
    if (spec.target_loss > 0) header += " | time to loss " + format_number("%.3g", spec.target_loss);
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
        if (d.has_interval()) versus += " (" + verdicts[size_t(&g - groups.data())] + ")";
      }
      o << "| " << g.name << " | " << f.seeds << " | " << r.strategy << " | " << workers_label(r) << " | " << r.steps
        << " | " << format_mean_interval(f.loss, 4) << " | " << format_mean_interval(f.ppl, 3) << " | " << versus
        << " | " << megabytes_text(f.bytes_per_worker) << " | " << reduction << " | "
        << plain_text(seconds_figure(f.sim_seconds));
      if (spec.target_loss > 0) {
        o << " | " << target_times_text(f.to_target);
        censored = censored || f.to_target.censored();
      }
      o << " | " << (r.has_correlation && r.workers > 1 ? format_number("%.4f", f.correlation.mean) : std::string("—"))
        << " |\n";
    }
    o << "\n";
    if (spec.seeds > 1)
      o << "Means over " << spec.seeds << " seeds ± the half-width of their 95% Student-t interval (left out where "
        << "it would print as 0); differences against " << base.name << " are paired by seed (n pairs).\n\n";
    if (const std::string holm = holm_note(groups, base); !holm.empty()) o << holm << "\n\n";
    if (censored)
      o << "Time to loss: a seed that never reaches it counts as its run's end, a lower bound, shown as \"≥ T (k of "
           "K reached)\".\n\n";
    s.against = loss_against(spec, groups);
    o << s.against.markdown;
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
  const PresetChecks checks = judge_preset(spec, dir, missing.empty());
  if (!checks.claims.empty()) {
    o << "**Checks** (computed from the run folders; a check holds or fails only when the 95% interval of its "
         "paired difference over seeds excludes 0, or exactly when the difference is the same in every seed or "
         "names no run; *equivalent*: inconclusive, but the interval lies inside ± its effect):\n\n";
    for (const ReportClaim& c : checks.claims) {
      o << "- " << (c.outcome == "holds" ? c.outcome : "**" + c.outcome + "**") << ": " << c.text << " — `" << c.check
        << "` (effect " << c.effect << "): " << c.figures << "\n";
      if (!c.prose.empty()) o << "  " << c.prose << "\n";
    }
    o << "\n";
  }
  s.verdict = checks.verdict;
  if (!checks.claims.empty()) {
    s.tally = tally_cell(checks);
    const ReportClaim& first = checks.claims.front();
    s.first_check = first.outcome + ": " + first.difference;
    int resolving = 0;
    for (const ReportClaim& c : checks.claims) resolving += c.resolves ? 1 : 0;
    s.resolved = std::to_string(resolving) + " of " + std::to_string(checks.claims.size()) +
                 (spec.effect > 0 ? " (e = " + format_number("%.3g", spec.effect) + ")" : " (no effect stated)");
  }
  o << "**Verdict: " << s.verdict << "**";
  if (!checks.tally.empty()) o << " (" << checks.tally << ")";
  o << "\n\n";
  if (!spec.discussion.empty()) o << spec.discussion << "\n\n";
  s.body = o.str();
  return s;
}

// "R3" -> 3; -1 for an id that is not R and a number.
int target_number(const std::string& id) {
  if (id.size() < 2 || id[0] != 'R') return -1;
  for (size_t i = 1; i < id.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(id[i]))) return -1;
  return id.size() > 6 ? -1 : std::stoi(id.substr(1));
}

// "R1–R14" for three or more consecutive targets in order, else "R10, R12".
std::string id_list(const std::vector<std::string>& ids) {
  bool consecutive = ids.size() >= 3;
  for (size_t i = 0; consecutive && i < ids.size(); ++i)
    consecutive = target_number(ids[i]) >= 0 && target_number(ids[i]) == target_number(ids[0]) + static_cast<int>(i);
  if (consecutive) return ids.front() + "–" + ids.back();
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "" : ", ") + id;
  return list;
}

Page results_page(const std::vector<SweepSpec>& specs, const std::string& out_root) {
  std::vector<Section> sections;
  for (const auto& spec : specs) sections.push_back(render(spec, out_root));
  // The title names the targets the page covers: "R1–R14" when they run
  // without a gap, else each one ("R10, R12, R13").
  std::vector<std::string> ids;
  for (const auto& spec : specs)
    if (!spec.id.empty()) ids.push_back(spec.id);
  const std::string covered = ids.empty() ? "" : " (" + id_list(ids) + ")";
  std::ostringstream o;
  o << "# Reproduction results" << covered
    << "\n\n"
       "<!-- Generated by `build/atoll results` from the presets in configs/ and their run folders; "
       "do not edit by hand. -->\n\n"
       "Each section is one preset in `configs/`, a reproduction target from ALGORITHMS.md §9 scaled down to a "
       "2-core machine. The tables and verdicts are computed from the finished run folders by "
       "`build/atoll results`; each check is written in its preset, next to the claim, and judged over seeds: "
       "it holds when the 95% Student-t interval of its paired difference lies on its side of 0, fails when it "
       "lies on the other, and is *inconclusive* otherwise (also with one seed, which gives no interval); a check "
       "that names no run, or whose difference is the same in every seed, is decided exactly; an inconclusive "
       "check whose interval lies inside ± its effect is *equivalent* (no difference as large as the effect). A "
       "seed that never reaches a target loss counts at its run's end (a lower bound): a check holds with it only "
       "conservatively and is inconclusive when it fails only because of it. Verdict: *reproduced* when every "
       "check holds, *partly* when some do, *not reproduced* when none does and one fails, *no difference as "
       "large as the effect* when none holds or fails and one is equivalent, *inconclusive* otherwise. The text "
       "under a check is its preset's for the outcome computed. Other measured tables "
       "(earlier experiment scripts, real runs, network checks) are in [MEASUREMENTS.md](MEASUREMENTS.md); "
       "speed figures in [BENCHMARKS.md](BENCHMARKS.md).\n\n";
  const std::string header =
      "| target | experiment | verdict | checks | first check: left − right, 95% | checks resolving the effect | "
      "since round one |";
  o << header << "\n" << markdown_delimiter(header) << "\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string anchor = specs[i].id.empty() ? specs[i].name : specs[i].id;
    const Section& sec = sections[i];
    o << "| " << anchor << " | " << specs[i].title << " | " << sec.verdict << " | " << sec.tally << " | "
      << sec.first_check << " | " << sec.resolved << " | " << (specs[i].changes.empty() ? "—" : specs[i].changes)
      << " |\n";
  }
  o << "\n*First check*: the preset's first check (its headline), its outcome and its paired difference "
       "left − right over seeds with the half-width of the 95% interval (n pairs). *Resolving the effect*: checks "
       "decided exactly or with a half-width ≤ 0.7 e, about 80% power against an effect e.\n\n";
  for (size_t i = 0; i < specs.size(); ++i) {
    o << "## " << (specs[i].id.empty() ? "" : specs[i].id + ": ") << specs[i].title << "\n\n" << sections[i].body;
  }
  Page page{o.str(), {}};
  for (const Section& sec : sections)
    if (!sec.against.svg.empty()) page.charts.push_back({sec.against.file, sec.against.svg});
  return page;
}

}  // namespace

std::string results_markdown(const std::vector<SweepSpec>& specs, const std::string& out_root) {
  return results_page(specs, out_root).markdown;
}

void write_results_markdown(const std::vector<SweepSpec>& specs, const std::string& out_root, const std::string& path) {
  const Page page = results_page(specs, out_root);
  // The charts first: a page never links a chart that is not there yet.
  if (!page.charts.empty()) {
    const std::filesystem::path img = std::filesystem::path(path).parent_path() / "img";
    std::filesystem::create_directories(img);
    for (const auto& [file, svg] : page.charts) write_file_atomic((img / file).string(), svg);
  }
  write_file_atomic(path, page.markdown);
}

}  // namespace atl
