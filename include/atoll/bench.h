// `atoll bench`: the performance figures, each next to a reference measured in
// the same run (GEMM rate, memory copy, plain local AdamW, N x one worker), so
// that a noisy, shared machine still gives a stable ratio. Figures only: a
// benchmark never passes or fails; a target is printed as met or not.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace atl {

struct BenchOptions {
  bool quick = false;                  // fewer sizes, steps and repetitions (about a minute)
  std::vector<std::string> groups;     // empty: all of bench_groups()
  std::string config_path;             // model and strategy settings; empty: the embedded defaults
  std::vector<std::string> overrides;  // section.key=value on top of the config
  std::string data_root = "data";      // the prepared Brown corpus, for the simulation group
  std::string json_path;               // if set, every figure is also written here as JSON
};

// One measured figure. ratio = value / reference_value unless the figure says
// otherwise (the strategy overheads are fractions of a training step).
struct BenchFigure {
  std::string group;
  std::string name;
  double value = 0;
  std::string unit;
  std::string reference;  // what the ratio is against; empty: no reference
  double reference_value = 0;
  double ratio = 0;
  std::string target;  // e.g. ">= 0.50"; empty: no target
  bool target_met = true;
  std::string note;
};

// The groups, in the order they run: gloo (first, because it forks), compute,
// allreduce, codecs, strategies, simulation, retime.
std::vector<std::string> bench_groups();

// Runs the selected groups, printing one line per figure to `out` as it is
// measured, and returns the figures. Throws std::invalid_argument for an
// unknown group or a bad override.
std::vector<BenchFigure> run_benchmarks(const BenchOptions& opts, std::ostream& out);

}  // namespace atl
