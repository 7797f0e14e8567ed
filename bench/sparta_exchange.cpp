// SPARTA's per-step exchange cost against the default GPT's training step,
// and the cost of the parameter-correlation metric. A benchmark, not a test:
// figures only, no pass/fail.
//   build/bench_sparta [exchanges] [config overrides section.key=value ...]
// Defaults: the embedded default GPT, N = 4 workers, p = 0.005.
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "atoll/comm.h"
#include "atoll/config.h"
#include "atoll/model.h"
#include "atoll/strategy.h"
#include "strategy/sparta.h"
#include "train/correlation.h"
#include "train/threads.h"

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

int main(int argc, char** argv) {
  const int exchanges = argc > 1 ? std::stoi(argv[1]) : 100;
  std::vector<std::string> overrides = {"strategy.name=sparta", "strategy.workers=4"};
  overrides.insert(overrides.end(), argv + std::min(argc, 2), argv + argc);
  atl::Config cfg = atl::load_config("", overrides);
  const int64_t n = cfg.strategy.workers, vocab = 85;
  const int64_t threads = atl::threads_per_worker(cfg.run.threads, n);
  atl::tune_allocator();

  // One worker's training step (forward, backward, AdamW) with the threads a
  // worker gets in an N-worker simulation, measured as thread CPU time.
  double step_cpu = 0;
  std::thread([&] {
    atl::set_compute_threads(threads);
    auto model = atl::make_model(cfg.model, vocab, 1);
    atl::Config single = cfg;
    single.strategy.name = "single";
    single.strategy.workers = 1;
    atl::InProcessGroup group(1);
    auto strategy = atl::make_strategy(single, model->parameters(), group.rank(0));
    const int64_t B = cfg.train.batch_size, T = cfg.model.block_size;
    at::Tensor x = at::randint(vocab, {B, T}, at::kLong), y = at::randint(vocab, {B, T}, at::kLong);
    for (int t = 0; t < 3; ++t) {
      model->loss(x, y).backward();
      strategy->step(t, cfg.optim.lr);
    }
    const int steps = 10;
    const double c0 = threads == 1 ? atl::thread_cpu_seconds() : 0;
    const auto w0 = Clock::now();
    for (int t = 0; t < steps; ++t) {
      model->loss(x, y).backward();
      strategy->step(t, cfg.optim.lr);
    }
    step_cpu = (threads == 1 ? atl::thread_cpu_seconds() - c0 : since(w0)) / steps;
  }).join();

  // N workers doing only the sparse exchange (select, gather, all-reduce,
  // scatter), each on its own thread over an InProcessGroup.
  std::vector<std::shared_ptr<atl::Model>> models;
  for (int64_t w = 0; w < n; ++w) models.push_back(atl::make_model(cfg.model, vocab, 1));
  const int64_t params = models[0]->num_params();
  atl::InProcessGroup group(n);
  std::vector<double> cpu(n, 0);
  const auto wall0 = Clock::now();
  std::vector<std::thread> workers;
  for (int64_t w = 0; w < n; ++w)
    workers.emplace_back([&, w] {
      atl::set_compute_threads(threads);
      atl::SparseAverager sparse(cfg, models[w]->parameters(), group.rank(w));
      const double c0 = atl::thread_cpu_seconds();
      for (int t = 0; t < exchanges; ++t) sparse.after_step(t);
      cpu[w] = atl::thread_cpu_seconds() - c0;
    });
  for (auto& t : workers) t.join();
  const double wall = since(wall0) / exchanges;
  double mean_cpu = 0;
  for (double c : cpu) mean_cpu += c / double(n) / exchanges;

  // The selector alone (mask generation), one thread.
  std::vector<int64_t> sizes;
  for (const auto& p : models[0]->parameters()) sizes.push_back(p.numel());
  auto selector = atl::make_index_selector(cfg.sparta.selector, sizes, cfg.sparta.p, 1);
  const auto s0 = Clock::now();
  int64_t selected = 0;
  for (int t = 0; t < exchanges; ++t) selected += selector->select(t, t, cfg.sparta.p).size();
  const double select_s = since(s0) / exchanges;

  // The correlation metric over the N workers' parameters.
  std::vector<std::vector<at::Tensor>> all;
  for (auto& m : models) all.push_back(m->parameters());
  const auto k0 = Clock::now();
  atl::parameter_correlation(all);
  const double corr_s = since(k0);

  std::printf("model: %lld params; N = %lld; p = %g; selector %s; %lld thread(s) per worker\n",
              (long long)params, (long long)n, cfg.sparta.p, cfg.sparta.selector.c_str(), (long long)threads);
  std::printf("training step (fwd+bwd+AdamW), one worker: %.2f ms\n", 1e3 * step_cpu);
  std::printf("sparse exchange per worker per step: %.3f ms CPU (%.0f entries), %.3f ms wall for all %lld\n",
              1e3 * mean_cpu, double(selected) / exchanges, 1e3 * wall, (long long)n);
  std::printf("  of which mask selection: %.3f ms\n", 1e3 * select_s);
  std::printf("exchange / step: %.4f (target <= 0.03)\n", mean_cpu / step_cpu);
  std::printf("correlation metric, N = %lld: %.1f ms per evaluation (%.4f of one step per step at every 50)\n",
              (long long)n, 1e3 * corr_s, corr_s / 50 / step_cpu);
  return 0;
}
