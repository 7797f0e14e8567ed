// simulation: what simulating N workers costs beyond their own compute, and
// what the parameter-correlation metric costs. Runs simulate() end to end on
// the prepared Brown corpus.
#include <ATen/ATen.h>

#include <thread>

#include "atoll/model.h"
#include "atoll/train.h"
#include "bench/measure.h"
#include "train/correlation.h"
#include "train/threads.h"

namespace atl::bench {
namespace {

// Wall seconds of simulate() for `strategy` with `workers`, best of `reps`.
double simulated_seconds(const Context& ctx, const std::string& strategy, int64_t workers, int64_t steps,
                         int64_t threads, int reps) {
  Config cfg = ctx.cfg;
  cfg.data.data_root = ctx.opts.data_root;
  cfg.strategy.name = strategy;
  cfg.strategy.workers = workers;
  cfg.train.steps = steps;
  cfg.train.eval_every = 0;
  cfg.train.eval_batches = 1;
  cfg.strategy.correlation_every = 0;
  cfg.run.progress = false;
  cfg.run.threads = threads;
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    try {
      best = std::min(best, simulate(cfg).wall_seconds);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("bench simulation needs the prepared Brown corpus under ") +
                               ctx.opts.data_root + " (scripts/setup prepares it; --data-root sets it): " +
                               e.what());
    }
  }
  return best;
}

}  // namespace

void run_simulation(const Context& ctx, Sink& sink) {
  const int64_t steps = ctx.opts.quick ? 4 : 20;
  const int reps = ctx.opts.quick ? 1 : 2;
  const int64_t cores = ctx.cores;
  const double t1 = simulated_seconds(ctx, "single", 1, steps, 0, reps);
  const double t1_one_thread = simulated_seconds(ctx, "single", 1, steps, 1, reps);
  sink.note(std::to_string(steps) + " steps; one worker on " + std::to_string(cores) + " cores: " +
            std::to_string(t1).substr(0, 5) + " s, on one thread: " + std::to_string(t1_one_thread).substr(0, 5) +
            " s");
  for (const char* strategy : {"diloco", "ddp"}) {
    for (int64_t n : {int64_t(4), int64_t(8)}) {
      const double tn = simulated_seconds(ctx, strategy, n, steps, 0, reps);
      // Each simulated worker gets one thread when N >= cores, so the fair
      // yardstick is N one-thread workers spread over the cores.
      const double ideal = double(n) * t1_one_thread / double(std::min<int64_t>(cores, n));
      const std::string label = std::string(strategy) + ", N=" + std::to_string(n) + " simulated workers";
      // Efficiency = yardstick / T(N): the ratio is reference over value here.
      BenchFigure f = figure("simulation", label, tn, "s", "N x T(1) / cores, T(1) = one worker on one thread",
                             ideal);
      f.ratio = ideal / tn;
      sink.add(with_target(f, ">=", 0.95));
      BenchFigure g = figure("simulation", label, tn, "s", "N x T(1), T(1) = one worker on all cores",
                             double(n) * t1);
      g.ratio = double(n) * t1 / tn;
      g.note = "one worker cannot keep every core busy, so N x T(1) overstates the work and the ratio can exceed 1; the one-thread yardstick is the fair one";
      sink.add(g);
    }
  }

  // The correlation metric over 4 workers' parameters, against a step.
  std::vector<std::vector<at::Tensor>> params;
  for (int w = 0; w < 4; ++w) params.push_back(make_model(ctx.cfg.model, kBenchVocab, uint64_t(w + 1))->parameters());
  double corr = 0;
  std::thread([&] {
    set_compute_threads(1);
    corr = best_seconds([&] { parameter_correlation(params); }, ctx.budget);
  }).join();
  const double step = t1_one_thread / double(steps);
  const int64_t every = ctx.cfg.strategy.correlation_every > 0 ? ctx.cfg.strategy.correlation_every : 50;
  BenchFigure c = figure("simulation", "correlation metric, N=4, per step at every " + std::to_string(every),
                         1e3 * corr / double(every), "ms/step", "one worker's step on one thread", 1e3 * step);
  c.note = std::to_string(1e3 * corr).substr(0, 5) + " ms per evaluation";
  sink.add(c);
}

}  // namespace atl::bench
