// What every benchmark group shares: timing helpers, the run's settings and
// the sink that prints each figure as soon as it is measured.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "atoll/bench.h"
#include "atoll/config.h"

namespace atl::bench {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Seconds of the fastest of several runs of `op`, after one warm-up: it repeats
// for about `budget` seconds and at least `min_reps` times. The minimum is the
// run least disturbed by the rest of a shared machine.
template <class F>
double best_seconds(F&& op, double budget, int min_reps = 3) {
  op();
  double best = 1e300, total = 0;
  for (int k = 0; k < min_reps || total < budget; ++k) {
    const auto t0 = Clock::now();
    op();
    const double t = since(t0);
    best = std::min(best, t);
    total += t;
  }
  return best;
}

struct Context {
  BenchOptions opts;
  Config cfg;           // model, strategy and optimizer settings of the run
  int64_t cores = 1;    // cores available to this process
  double budget = 1.0;  // seconds per repeated measurement
};

// Prints each figure as one line and keeps it.
class Sink {
 public:
  explicit Sink(std::ostream& out) : out_(out) {}
  void add(BenchFigure f);
  void note(const std::string& line);  // a line of context (not a figure)
  std::vector<BenchFigure> figures;

 private:
  std::ostream& out_;
};

// Builds a figure; ratio = value / reference_value when both are given.
BenchFigure figure(const std::string& group, const std::string& name, double value, const std::string& unit,
                   const std::string& reference = "", double reference_value = 0);
// Sets a target on the ratio: ">= x" or "<= x".
BenchFigure& with_target(BenchFigure& f, const std::string& op, double bound);

// The groups (one .cpp each).
void run_gloo(const Context& ctx, Sink& sink);
void run_compute(const Context& ctx, Sink& sink);
void run_gemm_shapes(const Context& ctx, Sink& sink);  // part of compute
void run_profile(const Context& ctx, Sink& sink);
void run_allreduce(const Context& ctx, Sink& sink);
void run_codecs(const Context& ctx, Sink& sink);
void run_strategies(const Context& ctx, Sink& sink);
void run_simulation(const Context& ctx, Sink& sink);
void run_retime(const Context& ctx, Sink& sink);
void run_preset(const Context& ctx, Sink& sink);

// Vocabulary of the synthetic batches (the Brown corpus's character count).
constexpr int64_t kBenchVocab = 85;

}  // namespace atl::bench
