#include "report/groups.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>

#include "report/figure_text.h"
#include "util/format.h"

namespace atl {
namespace {

// "ddp_s2" -> "ddp"; names without a seed suffix stay as they are.
std::string without_seed_suffix(const std::string& name) {
  const auto at = name.rfind("_s");
  if (at == std::string::npos || at + 2 >= name.size()) return name;
  for (size_t i = at + 2; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  return name.substr(0, at);
}

std::map<std::string, std::string> without_seed(const std::map<std::string, std::string>& config) {
  auto c = config;
  c.erase("run.seed");
  return c;
}

std::string seed_of(const RunData& r) {
  auto it = r.config.find("run.seed");
  return it == r.config.end() ? "" : it->second;
}

MeanInterval over(const RunGroup& g, double (*pick)(const RunData&)) {
  std::vector<double> v;
  for (const RunData* r : g.runs) v.push_back(pick(*r));
  return mean_interval(v);
}

}  // namespace

std::vector<RunGroup> group_by_seed(const std::vector<RunData>& runs) {
  std::vector<RunGroup> groups;
  std::vector<std::map<std::string, std::string>> keys;
  for (const RunData& r : runs) {
    const auto key = without_seed(r.config);
    RunGroup* home = nullptr;
    for (size_t i = 0; i < groups.size() && !home; ++i) {
      if (keys[i] != key) continue;
      const bool seed_taken = std::any_of(groups[i].runs.begin(), groups[i].runs.end(),
                                          [&](const RunData* o) { return seed_of(*o) == seed_of(r); });
      if (!seed_taken) home = &groups[i];
    }
    if (home == nullptr) {
      groups.push_back({r.name, {}});
      keys.push_back(key);
      home = &groups.back();
    }
    home->runs.push_back(&r);
  }
  // A group of several seeds is named by its runs' common stem.
  for (auto& g : groups) {
    if (g.runs.size() < 2) continue;
    const std::string stem = without_seed_suffix(g.runs.front()->name);
    const bool common = std::all_of(g.runs.begin(), g.runs.end(),
                                    [&](const RunData* r) { return without_seed_suffix(r->name) == stem; });
    if (common) g.name = stem;
  }
  return groups;
}

GroupFigures group_figures(const RunGroup& g, double target_loss) {
  GroupFigures f;
  f.seeds = static_cast<int>(g.runs.size());
  f.loss = over(g, [](const RunData& r) { return r.final_val_loss; });
  f.ppl = over(g, [](const RunData& r) { return std::exp(r.final_val_loss); });
  f.bytes_per_worker = over(g, [](const RunData& r) { return r.bytes_sent_per_worker; });
  f.bytes_total = over(g, [](const RunData& r) { return r.bytes_sent_total; });
  f.sim_seconds = over(g, [](const RunData& r) { return r.sim_seconds; });
  f.utilisation = over(g, [](const RunData& r) { return r.utilisation; });
  f.correlation = over(g, [](const RunData& r) { return r.final_correlation; });
  f.update_correlation = over(g, [](const RunData& r) { return r.final_update_correlation; });
  f.disagreement = over(g, [](const RunData& r) { return r.final_disagreement; });
  f.accuracy = over(g, [](const RunData& r) { return r.final_val_accuracy; });
  std::vector<TargetTime> times;
  if (target_loss > 0)
    for (const RunData* r : g.runs) times.push_back(target_time(*r, target_loss));
  f.to_target = target_times(times);
  return f;
}

MeanInterval paired_loss_difference(const RunGroup& a, const RunGroup& b) {
  std::vector<double> d;
  for (const RunData* x : a.runs)
    for (const RunData* y : b.runs)
      if (seed_of(*x) == seed_of(*y)) d.push_back(x->final_val_loss - y->final_val_loss);
  return mean_interval(d);
}

std::string format_paired_difference(const MeanInterval& d, double base_loss, const std::string& plus_minus) {
  if (d.n == 0) return "no shared seed";
  if (!std::isfinite(d.mean)) return "not finite (diverged)";
  const std::string pairs = d.n == 1 ? "n=1 pair" : "n=" + std::to_string(d.n) + " pairs";
  if (!d.has_interval())
    return format_number("%+.4f", d.mean) + format_number(" (%+.2f%%, ", 100.0 * d.mean / base_loss) + pairs + ")";
  // An interval that rounds to 0.0000 is left out, as in every table.
  const std::string interval = figure_text(d, {FigureFormat::Decimals, 4}).interval;
  return format_number("%+.4f", d.mean) + (interval.empty() ? "" : " " + plus_minus + " " + interval) + " (" + pairs +
         ")";
}

std::vector<std::string> versus_verdicts(const std::vector<RunGroup>& groups, const RunGroup& base) {
  std::vector<double> p;
  std::vector<size_t> compared;
  std::vector<std::string> out(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    if (&groups[i] == &base) continue;
    const MeanInterval d = paired_loss_difference(groups[i], base);
    if (!d.has_interval()) {
      out[i] = d.n < 2 ? "one seed" : "no interval";
      continue;
    }
    compared.push_back(i);
    p.push_back(paired_t_p_value(d));
  }
  const std::vector<bool> rejected = holm_rejected(p);
  for (size_t k = 0; k < compared.size(); ++k) out[compared[k]] = rejected[k] ? "significant" : "inconclusive";
  return out;
}

std::string holm_note(const std::vector<RunGroup>& groups, const RunGroup& base) {
  size_t m = 0;
  for (const auto& g : groups)
    if (&g != &base && paired_loss_difference(g, base).has_interval()) ++m;
  if (m < 2) return "";
  return "Significance against " + base.name + " is Holm-adjusted over the " + std::to_string(m) +
         " settings compared with it (family-wise error 5%, p-values from the paired t test); the ± intervals are "
         "unadjusted 95% intervals, so one may exclude 0 while its setting is not marked significant.";
}

const RunGroup& reference_group(const std::vector<RunGroup>& groups, const std::string& name) {
  if (groups.empty()) throw std::invalid_argument("no runs to compare");
  if (!name.empty()) {
    for (const auto& g : groups)
      if (g.name == name) return g;
    for (const auto& g : groups)
      for (const RunData* r : g.runs)
        if (r->name == name) return g;
    throw std::invalid_argument("baseline '" + name + "' is not one of the runs");
  }
  const RunGroup* ddp = ddp_group(groups);
  return ddp ? *ddp : groups.front();
}

const RunGroup* ddp_group(const std::vector<RunGroup>& groups) {
  for (const auto& g : groups)
    if (g.runs.front()->strategy == "ddp") return &g;
  return nullptr;
}

}  // namespace atl
