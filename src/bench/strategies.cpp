// strategies: what each method adds to a worker's training step over plain
// local AdamW, at its default settings, amortised over a whole period (every
// DiLoCo outer step, SPARTA exchange, DeMo compression and codec included).
// codecs: payload codec round trips against a plain copy.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <thread>

#include "atoll/comm.h"
#include "atoll/model.h"
#include "atoll/strategy.h"
#include "bench/measure.h"
#include "compress/codec.h"
#include "strategy/table.h"
#include "train/threads.h"

namespace atl::bench {
namespace {

struct StepCost {
  double strategy_cpu = 0;      // per step, mean over workers: thread CPU seconds in Strategy::step
  double forward_backward = 0;  // per step, mean over workers: thread CPU seconds of forward + backward
};

// N workers, each on its own thread as in a simulation, run `steps` steps of
// strategy `name`. The gradients come from one real backward per worker and
// are put back before every step (untimed), so only the strategy's own work
// is measured: clip, inner AdamW, and whatever the method adds.
StepCost strategy_step_cost(Config cfg, const std::string& name, int64_t workers, int64_t steps) {
  cfg.strategy.name = name;
  cfg.strategy.workers = name == "single" ? 1 : workers;
  // "single" is plain local AdamW: every worker alone in a group of one.
  std::vector<std::unique_ptr<InProcessGroup>> groups;
  if (name == "single") {
    for (int64_t w = 0; w < workers; ++w) groups.push_back(std::make_unique<InProcessGroup>(1));
  } else {
    groups.push_back(std::make_unique<InProcessGroup>(workers));
  }
  const int64_t threads = threads_per_worker(cfg.run.threads, workers);
  std::vector<StepCost> cost(static_cast<size_t>(workers));
  std::vector<std::string> errors(static_cast<size_t>(workers));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w) {
    pool.emplace_back([&, w] {
      try {
        set_compute_threads(threads);
        Communicator& comm = name == "single" ? groups[size_t(w)]->rank(0) : groups[0]->rank(w);
        auto model = make_model(cfg.model, kBenchVocab, 1);
        std::vector<std::string> names;
        for (const auto& item : model->named_parameters()) names.push_back(item.key());
        const std::vector<at::Tensor> params = model->parameters();
        auto strategy = make_strategy(cfg, params, comm, names);
        const int64_t B = cfg.train.batch_size, T = model->tokens_per_example();
        at::Tensor x = at::randint(kBenchVocab, {B, T}, at::kLong), y = at::randint(kBenchVocab, {B, T}, at::kLong);
        model->loss(x, y).backward();  // warm-up
        const double f0 = thread_cpu_seconds();
        const int fb_reps = 2;
        for (int k = 0; k < fb_reps; ++k) {
          for (const auto& p : params)
            if (p.grad().defined()) p.grad().zero_();
          model->loss(x, y).backward();
        }
        cost[size_t(w)].forward_backward = (thread_cpu_seconds() - f0) / fb_reps;
        std::vector<at::Tensor> grads;
        for (const auto& p : params) grads.push_back(p.grad().defined() ? p.grad().clone() : at::zeros_like(p));
        double cpu = 0;
        for (int64_t t = 0; t < steps; ++t) {
          if (strategy->needs_gradient(t)) {
            at::NoGradGuard no_grad;
            for (size_t i = 0; i < params.size(); ++i) {
              at::Tensor p = params[i];
              if (p.grad().defined()) {
                p.mutable_grad().copy_(grads[i]);
              } else {
                p.mutable_grad() = grads[i].clone();
              }
            }
          }
          const double c0 = thread_cpu_seconds();
          strategy->step(t, cfg.optim.lr);
          cpu += thread_cpu_seconds() - c0;
        }
        cost[size_t(w)].strategy_cpu = cpu / double(steps);
      } catch (const std::exception& e) {
        errors[size_t(w)] = e.what();
        for (auto& g : groups) g->abort(e.what());
      }
    });
  }
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (!e.empty()) throw std::runtime_error("bench strategies, " + name + ": " + e);
  StepCost mean;
  for (const auto& c : cost) {
    mean.strategy_cpu += c.strategy_cpu / double(workers);
    mean.forward_backward += c.forward_backward / double(workers);
  }
  return mean;
}

}  // namespace

void run_strategies(const Context& ctx, Sink& sink) {
  if (ctx.cfg.model.kind != "gpt") throw std::invalid_argument("bench strategies: needs model.kind = gpt");
  Config cfg = ctx.cfg;
  const int64_t workers = 4;
  // A whole period of the slowest default schedule (DiLoCo's H = 500), so
  // every periodic cost is amortised as in training. Quick: H = 100.
  int64_t steps = cfg.diloco.inner_steps;
  if (ctx.opts.quick) {
    steps = 100;
    cfg.diloco.inner_steps = 100;
    sink.note("quick: diloco.inner_steps = 100, so DiLoCo-family outer steps cost 5x their default share");
  }
  sink.note(std::to_string(workers) +
            " workers on threads; CPU time per worker per step; reference: a local "
            "AdamW training step (forward, backward, clip, AdamW) measured in the same run");
  // The baseline runs first and last; the mean is the reference and the
  // difference of the two shows how much of a small overhead is noise.
  const StepCost first = strategy_step_cost(cfg, "single", workers, steps);
  std::vector<std::pair<std::string, StepCost>> costs;
  for (const Method& m : strategy_table())  // every multi-worker method; "single" is the reference
    if (!(m.traits & kOneWorker)) costs.emplace_back(m.name, strategy_step_cost(cfg, m.name, workers, steps));
  const StepCost last = strategy_step_cost(cfg, "single", workers, steps);
  const double adamw = (first.strategy_cpu + last.strategy_cpu) / 2;
  const double step = (first.forward_backward + last.forward_backward) / 2 + adamw;
  char line[200];
  std::snprintf(line, sizeof line,
                "local AdamW step: %.1f ms, of which clip + AdamW %.2f ms (first and last baseline runs: %.2f and "
                "%.2f ms, so differences below ~%.2f ms are noise)",
                1e3 * step, 1e3 * adamw, 1e3 * first.strategy_cpu, 1e3 * last.strategy_cpu,
                1e3 * std::abs(first.strategy_cpu - last.strategy_cpu));
  sink.note(line);
  for (const auto& [name, c] : costs) {
    BenchFigure f = figure("strategies", name + " overhead over local AdamW", 1e3 * (c.strategy_cpu - adamw), "ms/step",
                           "local AdamW training step", 1e3 * step);
    if (name == "demo") {
      f.note = "DeMo's DCT and top-k replace AdamW; no target";
      sink.add(f);
    } else {
      sink.add(with_target(f, "<=", 0.03));
    }
  }
}

void run_codecs(const Context& ctx, Sink& sink) {
  const int64_t n = ctx.opts.quick ? (int64_t(1) << 20) : (int64_t(1) << 22);
  double copy_s = 0;
  std::vector<std::pair<std::string, double>> codec_s;
  std::vector<double> wire;
  std::thread([&] {
    set_compute_threads(1);
    at::Tensor x = at::randn({n});
    at::Tensor copy = at::empty_like(x);
    copy_s = best_seconds([&] { copy.copy_(x); }, ctx.budget);
    for (const CodecInfo& info : codec_table()) {
      if (info.shorthand_for) continue;  // "fp4" is fp4-e3m0, measured under that name
      const std::string name = info.name;
      auto codec = make_codec(name, ctx.cfg.codec.block, ctx.cfg.codec.topk_density);
      double bytes = 0;
      codec_s.emplace_back(name, best_seconds([&] { bytes = codec->round_trip(x).bytes; }, ctx.budget));
      wire.push_back(bytes / double(n));
    }
  }).join();
  const double gb = double(n) * 4 / 1e9;
  sink.note("round trip (encode + decode) of " + std::to_string(n) + " fp32 values, one thread");
  for (size_t i = 0; i < codec_s.size(); ++i) {
    BenchFigure f = figure("codecs", codec_s[i].first + " round trip", gb / codec_s[i].second, "GB/s",
                           "copy of the same values", gb / copy_s);
    f.note = std::to_string(wire[i]).substr(0, 5) + " bytes/value on the wire";
    sink.add(f);
  }
}

}  // namespace atl::bench
