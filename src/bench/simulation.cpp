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
  cfg.train.final_eval = "sample";  // the figure is training's cost, not the full evaluation's
  cfg.strategy.correlation_every = 0;
  cfg.run.progress = false;
  cfg.run.threads = threads;
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    try {
      best = std::min(best, simulate(cfg).wall_seconds);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("bench simulation: ") + e.what() +
                               " (the group trains on the prepared Brown corpus under " + ctx.opts.data_root +
                               "; scripts/setup prepares it, --data-root points elsewhere)");
    }
  }
  return best;
}

// Wall seconds of `copies` one-worker, one-thread simulations run side by
// side (one thread each): the machine's throughput for independent workers,
// with the cores sharing caches and memory as simulated workers do.
double side_by_side_seconds(const Context& ctx, int64_t copies, int64_t steps, int reps) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    std::vector<std::thread> runs;
    std::vector<std::string> errors(static_cast<size_t>(copies));
    for (int64_t c = 0; c < copies; ++c)
      runs.emplace_back([&, c] {
        try {
          simulated_seconds(ctx, "single", 1, steps, 1, 1);
        } catch (const std::exception& e) {
          errors[size_t(c)] = e.what();
        }
      });
    for (auto& t : runs) t.join();
    for (const auto& e : errors)
      if (!e.empty()) throw std::runtime_error(e);
    best = std::min(best, since(t0));
  }
  return best;
}

}  // namespace

void run_simulation(const Context& ctx, Sink& sink) {
  const int64_t steps = ctx.opts.quick ? 4 : 20;
  const int reps = ctx.opts.quick ? 1 : 2;
  const int64_t cores = ctx.cores;
  const double t1 = simulated_seconds(ctx, "single", 1, steps, 0, reps);
  const double alone = simulated_seconds(ctx, "single", 1, steps, 1, reps);
  const double side_by_side = side_by_side_seconds(ctx, cores, steps, reps);
  sink.note(std::to_string(steps) + " steps; one worker on all " + std::to_string(cores) +
            " cores: " + std::to_string(t1).substr(0, 5) +
            " s; on one thread alone: " + std::to_string(alone).substr(0, 5) + " s; " + std::to_string(cores) +
            " one-thread workers side by side: " + std::to_string(side_by_side).substr(0, 5) + " s");
  for (const char* strategy : {"diloco", "ddp"}) {
    for (int64_t n : {int64_t(4), int64_t(8)}) {
      const double tn = simulated_seconds(ctx, strategy, n, steps, 0, reps);
      const std::string label = std::string(strategy) + ", N=" + std::to_string(n) + " simulated workers";
      // Efficiency = yardstick / T(N): the ratio is reference over value here.
      // Each simulated worker gets one thread when N >= cores, and the cores
      // run `cores` of them at a time, so the yardstick is N / cores rounds
      // of one-thread workers side by side.
      const double ideal = double(n) / double(cores) * side_by_side;
      BenchFigure f = figure("simulation", label, tn, "s", "N/cores x T(cores one-thread workers side by side)", ideal);
      f.ratio = ideal / tn;
      sink.add(with_target(f, ">=", 0.95));
      BenchFigure strict = figure("simulation", label, tn, "s", "N/cores x T(1), T(1) = one worker on one thread alone",
                                  double(n) / double(cores) * alone);
      strict.ratio = strict.reference_value / tn;
      strict.note = "strict: the lone worker has the caches and memory to itself";
      sink.add(strict);
      BenchFigure g = figure("simulation", label, tn, "s", "N x T(1), T(1) = one worker on all cores", double(n) * t1);
      g.ratio = double(n) * t1 / tn;
      g.note = "one worker cannot keep every core busy, so N x T(1) overstates the work and the ratio can exceed 1";
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
  const double step = side_by_side / double(steps);
  const int64_t every = ctx.cfg.strategy.correlation_every > 0 ? ctx.cfg.strategy.correlation_every : 50;
  BenchFigure c = figure("simulation", "correlation metric, N=4, per step at every " + std::to_string(every),
                         1e3 * corr / double(every), "ms/step", "one worker's step on one thread", 1e3 * step);
  c.note = std::to_string(1e3 * corr).substr(0, 5) + " ms per evaluation";
  sink.add(c);
}

}  // namespace atl::bench
