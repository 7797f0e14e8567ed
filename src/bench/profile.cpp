// profile: the share of a training step each kind of op takes (matrix
// products, GELU, softmax, copies, ...), for the configured model
// as one worker on every core, in fp32 and, where the CPU multiplies bf16
// natively, in bf16. The shares are of the step's wall time on the worker's
// thread, each op's own time (bench/op_timer.h); "unrecorded" is the time
// outside every recorded op (the strategy's and the loop's own code).
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

#include "bench/measure.h"
#include "bench/op_timer.h"
#include "bench/training_step.h"
#include "model/precision.h"

namespace atl::bench {
namespace {

struct StepProfile {
  double seconds_per_step = 0;
  std::map<std::string, double> seconds_by_op;  // summed over the timed steps
  double timed_seconds = 0;
};

StepProfile profile_steps(const Config& cfg, int64_t threads, int steps) {
  StepProfile p;
  std::thread([&] {
    TrainingStep step(cfg, threads);
    if (cfg.train.gemm == "auto") step.route_products();
    for (int t = 0; t < 2; ++t) step.run(t);  // warm-up
    OpTimer timer;
    const auto t0 = Clock::now();
    for (int t = 0; t < steps; ++t) step.run(t);
    p.timed_seconds = since(t0);
    p.seconds_by_op = timer.seconds_by_op();
  }).join();
  p.seconds_per_step = p.timed_seconds / steps;
  return p;
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

void report(const StepProfile& p, const std::string& label, Sink& sink) {
  std::map<std::string, double> by_kind;
  double recorded = 0;
  for (const auto& [op, s] : p.seconds_by_op) {
    by_kind[op_kind(op)] += s;
    recorded += s;
  }
  by_kind["unrecorded"] = std::max(0.0, p.timed_seconds - recorded);
  sink.add(figure("profile", label + ": step", 1e3 * p.seconds_per_step, "ms"));
  std::vector<std::string> kinds = op_kinds();
  kinds.push_back("unrecorded");
  for (const std::string& kind : kinds)
    sink.add(figure("profile", label + ": share of " + kind, 100 * by_kind[kind] / p.timed_seconds, "%"));
  BenchFigure f = figure("profile", label + ": GELU + copies", by_kind["GELU"] + by_kind["copies"], "s", "the step",
                         p.timed_seconds);
  sink.add(with_target(f, "<=", 0.05));
  // The ops behind the shares, largest first.
  std::vector<std::pair<double, std::string>> ops;
  for (const auto& [op, s] : p.seconds_by_op) ops.emplace_back(s, op);
  std::sort(ops.rbegin(), ops.rend());
  std::string line = "ops over 0.5% of the step:";
  const std::string engine = "autograd::engine::evaluate_function: ";  // backward nodes' prefix
  for (size_t k = 0; k < ops.size() && ops[k].first >= 0.005 * p.timed_seconds; ++k) {
    std::string name = ops[k].second;
    if (name.rfind(engine, 0) == 0) name = name.substr(engine.size());
    line += (k ? ", " : " ") + name + " " + percent(ops[k].first / p.timed_seconds);
  }
  sink.note(line);
}

}  // namespace

void run_profile(const Context& ctx, Sink& sink) {
  if (ctx.cfg.model.kind != "gpt") throw std::invalid_argument("bench profile: needs model.kind = gpt");
  const int steps = ctx.opts.quick ? 4 : 12;
  const std::string all = std::to_string(ctx.cores) + " thread" + (ctx.cores > 1 ? "s" : "");
  Config fp32 = ctx.cfg;
  fp32.train.precision = "fp32";
  report(profile_steps(fp32, ctx.cores, steps), "default GPT fp32, 1 worker x " + all, sink);
  const std::string no_bf16 = bf16_unavailable_reason(this_cpu_bf16_features());
  if (!no_bf16.empty()) {
    sink.note("bf16 profile skipped: " + no_bf16);
    return;
  }
  Config bf16 = ctx.cfg;
  bf16.train.precision = "bf16";
  report(profile_steps(bf16, ctx.cores, steps), "default GPT bf16, 1 worker x " + all, sink);
}

}  // namespace atl::bench
