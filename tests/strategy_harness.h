// Test harness for strategies: workers with a tiny least-squares model run
// on real threads over an InProcessGroup exactly as simulate() drives them.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "atoll/comm.h"
#include "atoll/strategy.h"

namespace atl::harness {

// A least-squares problem per worker: loss = mean((x W + b - y)^2) on a batch
// drawn from (data_seed, step). Small enough to be exact in float64.
struct Worker {
  std::vector<at::Tensor> params;
  explicit Worker(at::ScalarType dtype, int64_t in = 5, int64_t out = 3) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(7);
    params.push_back(at::randn({in, out}, gen, at::TensorOptions(dtype)).requires_grad_());
    params.push_back(at::randn({out}, gen, at::TensorOptions(dtype)).requires_grad_());
  }
  void backward(uint64_t data_seed, int64_t step) {
    at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(data_seed * 1000003u + uint64_t(step));
    auto opts = at::TensorOptions(params[0].scalar_type());
    at::Tensor x = at::randn({8, params[0].size(0)}, gen, opts), y = at::randn({8, params[0].size(1)}, gen, opts);
    at::Tensor loss = (at::matmul(x, params[0]) + params[1] - y).pow(2).mean();
    loss.backward();
  }
};

inline Config base_config(const std::string& strategy, const std::string& inner) {
  Config cfg;
  cfg.strategy.name = strategy;
  cfg.optim.name = inner;
  cfg.optim.grad_clip = 0;  // DDP clips the mean gradient, DiLoCo each worker's: turn off to compare
  return cfg;
}

// Runs fn(rank, communicator) for every rank of `group` on its own thread;
// the first failure aborts the group (releasing blocked ranks) and is rethrown.
inline void on_threads(InProcessGroup& group, const std::function<void(int64_t, Communicator&)>& fn) {
  const int64_t n = group.size();
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        fn(r, group.rank(r));
      } catch (...) {
        errors[r] = std::current_exception();
        group.abort("test worker " + std::to_string(r) + " failed");
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

// Per rank, per step: the parameters after that step (history[r][t][k]).
using History = std::vector<std::vector<std::vector<at::Tensor>>>;

struct RunOptions {
  at::ScalarType dtype = at::kDouble;
  int64_t in = 5, out = 3;                 // model shape: in*out + out parameters
  Ledger* rank0_ledger = nullptr;          // filled with rank 0's ledger
  std::vector<Ledger>* ledgers = nullptr;  // every rank's ledger
  History* history = nullptr;              // filled if set
};

// Runs `steps` steps of `cfg`'s strategy on n threads; worker w reads data
// stream data_seed(w). Returns every worker's final parameters.
inline std::vector<std::vector<at::Tensor>> run_with(const Config& cfg, int64_t n, int64_t steps, double lr,
                                                     const std::function<uint64_t(int64_t)>& data_seed,
                                                     const RunOptions& o) {
  InProcessGroup group(n);
  std::vector<Worker> workers(n, Worker(o.dtype, o.in, o.out));
  for (auto& w : workers)
    for (auto& p : w.params) p = p.detach().clone().requires_grad_();
  if (o.history) o.history->assign(n, {});
  on_threads(group, [&](int64_t r, Communicator& comm) {
    auto strategy = make_strategy(cfg, workers[r].params, comm);
    for (int64_t t = 0; t < steps; ++t) {
      comm.set_step(t);
      if (strategy->needs_gradient(t)) workers[r].backward(data_seed(r), t);
      strategy->step(t, lr);
      if (o.history) {
        std::vector<at::Tensor> snap;
        for (auto& p : workers[r].params) snap.push_back(p.detach().clone());
        (*o.history)[r].push_back(snap);
      }
    }
  });
  if (o.rank0_ledger) *o.rank0_ledger = group.rank(0).ledger();
  if (o.ledgers)
    for (int64_t r = 0; r < n; ++r) o.ledgers->push_back(group.rank(r).ledger());
  std::vector<std::vector<at::Tensor>> out;
  for (auto& w : workers) out.push_back(w.params);
  return out;
}

inline std::vector<std::vector<at::Tensor>> run(const Config& cfg, int64_t n, int64_t steps, double lr,
                                                const std::function<uint64_t(int64_t)>& data_seed,
                                                at::ScalarType dtype = at::kDouble, Ledger* rank0_ledger = nullptr) {
  RunOptions o;
  o.dtype = dtype;
  o.rank0_ledger = rank0_ledger;
  return run_with(cfg, n, steps, lr, data_seed, o);
}

inline double max_abs_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, (a[i] - b[i]).abs().max().item<double>());
  return m;
}

inline bool bitwise_equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (!at::equal(a[i], b[i])) return false;
  return true;
}

inline uint64_t own_data(int64_t w) { return 11 + uint64_t(w); }
inline uint64_t shared_data(int64_t) { return 11; }

}  // namespace atl::harness
