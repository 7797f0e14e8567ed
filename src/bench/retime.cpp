// retime: what replaying a run's timing traces costs against training it
// again, and how big the traces are. Trains short runs of the configured
// model on the prepared Brown corpus into a temporary folder.
#include <chrono>
#include <filesystem>
#include <random>

#include "atoll/train.h"
#include "bench/measure.h"
#include "train/replay.h"
#include "train/timing_files.h"

namespace atl::bench {
namespace {

struct TracedRun {
  double train_seconds = 0;  // wall seconds of train(), evaluations off
  std::vector<TimingTrace> traces;
  double trace_bytes = 0;  // worker 0's file
  Config cfg;
};

TracedRun traced_run(const Context& ctx, const std::string& strategy, const std::string& clock, int64_t steps) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("atoll_bench_retime_" + std::to_string(std::random_device{}()));
  TracedRun out;
  Config cfg = ctx.cfg;
  cfg.data.data_root = ctx.opts.data_root;
  cfg.strategy.name = strategy;
  cfg.strategy.workers = 4;
  cfg.train.steps = steps;
  cfg.train.eval_every = 0;
  cfg.train.eval_batches = 1;
  cfg.train.final_eval = "sample";
  cfg.strategy.correlation_every = 0;
  cfg.network.compute_time = clock;
  cfg.run.progress = false;
  cfg.run.checkpoint_every = 0;
  cfg.run.out_dir = root.string();
  cfg.run.name = "run";
  try {
    const auto t0 = Clock::now();
    train(cfg);
    out.train_seconds = since(t0);
    out.traces = read_timing_traces(root / "run", cfg.strategy.workers);
    out.trace_bytes = double(fs::file_size(timing_trace_path(root / "run", 0)));
  } catch (const std::exception& e) {
    fs::remove_all(root);
    throw std::runtime_error(std::string("bench retime: ") + e.what() +
                             " (the group trains on the prepared Brown corpus under " + ctx.opts.data_root + ")");
  }
  fs::remove_all(root);
  out.cfg = cfg;
  return out;
}

}  // namespace

void run_retime(const Context& ctx, Sink& sink) {
  // Few steps: the figures are ratios and sizes, and the configured model may be big.
  const int64_t steps = ctx.opts.quick ? 40 : 100;
  for (const char* strategy : {"ddp", "diloco"}) {
    for (const char* clock : {"flops", "measured"}) {
      const TracedRun run = traced_run(ctx, strategy, clock, steps);
      const std::string label = std::string(strategy) + ", N=4, " + clock + " clock";
      BenchFigure size = figure("retime", "timing trace of " + std::to_string(steps) + " steps, " + label,
                                run.trace_bytes, "B/worker");
      size.note = std::string(std::string(clock) == "flops"
                                  ? "identical steps fold into one block: the size grows with distinct steps, not steps"
                                  : "each step's measured compute differs, so every step is stored");
      sink.add(size);
      if (std::string(clock) != "flops") continue;
      Config other = run.cfg;
      other.network.bandwidth = "1Gbit/s";
      const double replay = best_seconds([&] { replay_traces(other, run.traces); }, ctx.budget, 1);
      BenchFigure f = figure("retime", "replay on another network, " + label, replay, "s",
                             "training the same run again", run.train_seconds);
      f.ratio = run.train_seconds / replay;
      f.note = "ratio = how many times faster a retime is than a new run (" + std::to_string(steps) + " steps)";
      sink.add(f);
    }
  }
}

}  // namespace atl::bench
