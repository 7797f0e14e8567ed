// `atoll bench`: runs the selected groups and prints/keeps their figures.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <stdexcept>

#include "atoll/setup.h"
#include "bench/measure.h"
#include "train/threads.h"
#include "util/machine.h"

namespace atl {
namespace bench {

namespace {
std::string format_value(double v) {
  char buf[64];
  const double a = std::fabs(v);
  std::snprintf(buf, sizeof buf, a >= 100 ? "%.1f" : a >= 1 ? "%.2f" : "%.4g", v);
  return buf;
}
}  // namespace

BenchFigure figure(const std::string& group, const std::string& name, double value, const std::string& unit,
                   const std::string& reference, double reference_value) {
  BenchFigure f;
  f.group = group;
  f.name = name;
  f.value = value;
  f.unit = unit;
  f.reference = reference;
  f.reference_value = reference_value;
  if (!reference.empty() && reference_value != 0) f.ratio = value / reference_value;
  return f;
}

BenchFigure& with_target(BenchFigure& f, const std::string& op, double bound) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s %.2f", op.c_str(), bound);
  f.target = buf;
  f.target_met = op == ">=" ? f.ratio >= bound : f.ratio <= bound;
  return f;
}

void Sink::add(BenchFigure f) {
  std::string line = "[" + f.group + "] " + f.name + ": " + format_value(f.value) + " " + f.unit;
  if (!f.reference.empty()) line += "  | vs " + f.reference + ": ratio " + format_value(f.ratio);
  if (!f.target.empty()) line += "  | target " + f.target + (f.target_met ? " met" : " NOT met");
  if (!f.note.empty()) line += "  (" + f.note + ")";
  out_ << line << std::endl;
  figures.push_back(std::move(f));
}

void Sink::note(const std::string& line) { out_ << "  " << line << std::endl; }

}  // namespace bench

namespace {
using Group = void (*)(const bench::Context&, bench::Sink&);
// Every group, in the order they run: gloo forks, and must do so before any
// other group has started threads.
const std::vector<std::pair<std::string, Group>>& group_table() {
  static const std::vector<std::pair<std::string, Group>> table = {{"gloo", bench::run_gloo},
                                                                   {"compute", bench::run_compute},
                                                                   {"profile", bench::run_profile},
                                                                   {"allreduce", bench::run_allreduce},
                                                                   {"codecs", bench::run_codecs},
                                                                   {"strategies", bench::run_strategies},
                                                                   {"simulation", bench::run_simulation},
                                                                   {"retime", bench::run_retime},
                                                                   {"preset", bench::run_preset}};
  return table;
}
}  // namespace

std::vector<std::string> bench_groups() {
  std::vector<std::string> names;
  for (const auto& [name, run] : group_table()) names.push_back(name);
  return names;
}

std::vector<BenchFigure> run_benchmarks(const BenchOptions& opts, std::ostream& out) {
  const std::vector<std::string> all = bench_groups();
  std::vector<std::string> chosen = opts.groups.empty() ? all : opts.groups;
  for (const auto& g : chosen) {
    if (std::find(all.begin(), all.end(), g) == all.end()) {
      std::string names;
      for (const auto& a : all) names += (names.empty() ? "" : ", ") + a;
      throw std::invalid_argument("unknown benchmark group '" + g + "'; choose from: " + names);
    }
  }
  bench::Context ctx;
  ctx.opts = opts;
  // The groups run every method from this config, so any method's keys may be set.
  ctx.cfg = load_config(opts.config_path, opts.overrides, OverrideCheck::kAnyMethod);
  ctx.cores = available_cores();
  ctx.budget = opts.quick ? 0.3 : 1.0;
  tune_allocator();  // as in training: freed buffers stay mapped

  bench::Sink sink(out);
  // Every figure belongs to a machine: the CPU and the BLAS kernels it ran.
  out << "machine: " << describe_machine(machine_info()) << std::endl;
  // In the table's order whatever the order asked for.
  for (const auto& [g, run] : group_table()) {
    if (std::find(chosen.begin(), chosen.end(), g) == chosen.end()) continue;
    out << "== " << g << std::endl;
    run(ctx, sink);
  }

  if (!opts.json_path.empty()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& f : sink.figures) {
      j.push_back({{"group", f.group},
                   {"name", f.name},
                   {"value", f.value},
                   {"unit", f.unit},
                   {"reference", f.reference},
                   {"reference_value", f.reference_value},
                   {"ratio", f.ratio},
                   {"target", f.target},
                   {"target_met", f.target_met},
                   {"note", f.note}});
    }
    std::ofstream file(opts.json_path);
    if (!file) throw std::runtime_error("cannot write " + opts.json_path);
    file << j.dump(1) << "\n";
  }
  return sink.figures;
}

}  // namespace atl
