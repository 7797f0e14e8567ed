// The simulate() driver: N worker threads, each running the same worker loop
// a real rank runs, joined by an InProcessGroup. Observers (logging and
// evaluation) meet at a Rendezvous that never touches the ledger or clocks.
#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "atoll/comm.h"
#include "atoll/model.h"
#include "atoll/net.h"
#include "atoll/strategy.h"
#include "atoll/train.h"
#include "train/correlation.h"
#include "train/data_source.h"
#include "train/metrics.h"
#include "train/rendezvous.h"
#include "train/threads.h"

namespace atl {

double learning_rate(const OptimConfig& cfg, int64_t t, int64_t total_steps) {
  if (t < cfg.warmup_steps) return cfg.lr * double(t + 1) / double(cfg.warmup_steps);
  if (cfg.schedule == "constant") return cfg.lr;
  const double span = std::max<int64_t>(1, total_steps - cfg.warmup_steps);
  const double progress = std::min(1.0, double(t - cfg.warmup_steps) / span);
  return cfg.min_lr + 0.5 * (cfg.lr - cfg.min_lr) * (1.0 + std::cos(M_PI * progress));
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// What a worker leaves for the observer before each rendezvous.
struct WorkerSlot {
  std::shared_ptr<Model> model;
  std::vector<at::Tensor> params;
  const std::vector<at::Tensor>* global = nullptr;  // strategy's global model, if any
  const Strategy* strategy = nullptr;               // read only while the worker is parked
  VirtualClock clock;
  Communicator* comm = nullptr;
  double loss_sum = 0;
  int64_t loss_count = 0;
  double last_loss = 0;
};

class Simulation {
 public:
  Simulation(const Config& cfg, MetricsLog& log, const TrainHooks& hooks)
      : cfg_(cfg),
        log_(log),
        hooks_(hooks),
        workers_(cfg.strategy.workers),
        data_(cfg),
        net_(NetworkModel::from_config(cfg.network, workers_, static_cast<uint64_t>(cfg.run.seed))),
        group_(workers_, parse_algorithm(cfg.network.algorithm)),
        rendezvous_(workers_),
        compute_slots_(std::max<int64_t>(1, available_cores() / threads_per_worker(cfg.run.threads, workers_))),
        slots_(workers_) {
    speed_ = parse_number_list(cfg.network.speed_factors, 1.0);  // checked by validate()
    speed_.resize(workers_, 1.0);
    threads_ = threads_per_worker(cfg.run.threads, workers_);
    // Every worker starts from bit-identical parameters: same seed, same init.
    const uint64_t init_seed = static_cast<uint64_t>(cfg.run.seed);
    for (int64_t w = 0; w < workers_; ++w) {
      slots_[w].model = make_model(cfg.model, data_.vocab_size(), init_seed);
      slots_[w].params = slots_[w].model->parameters();
      slots_[w].comm = &group_.rank(w);
    }
    eval_model_ = make_model(cfg.model, data_.vocab_size(), init_seed);
    params_ = eval_model_->num_params();
    flops_per_token_ = eval_model_->flops_per_token();
    tokens_per_step_ = cfg.train.batch_size * eval_model_->tokens_per_example();
  }

  RunSummary run() {
    tune_allocator();
    start_ = Clock::now();
    write_start_event();
    std::vector<std::thread> threads;
    for (int64_t w = 0; w < workers_; ++w) threads.emplace_back([this, w] { guarded_worker(w); });
    for (auto& t : threads) t.join();
    if (first_error_) std::rethrow_exception(first_error_);
    return summary_;
  }

 private:
  void guarded_worker(int64_t w) {
    try {
      worker(w);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      // Keep the root cause: errors caused by the abort itself come second.
      if (!first_error_) first_error_ = std::current_exception();
      group_.abort("worker " + std::to_string(w) + " failed");
      rendezvous_.abort();
    }
  }

  // The worker loop: the same sequence a real rank runs.
  void worker(int64_t w) {
    set_compute_threads(threads_);
    WorkerSlot& slot = slots_[w];
    Communicator& comm = *slot.comm;
    comm.attach_clock(&slot.clock, &net_);
    auto stream = data_.stream(w, workers_, mix_seed(static_cast<uint64_t>(cfg_.run.seed), uint64_t(w) + 1, 0xda7a));
    std::vector<std::string> names;
    for (const auto& item : slot.model->named_parameters()) names.push_back(item.key());
    auto strategy = make_strategy(cfg_, slot.params, comm, names);
    slot.global = strategy->global_params();
    slot.strategy = strategy.get();
    slot.model->train();
    const bool flops_mode = cfg_.network.compute_time == "flops";
    const double modelled_step =
        flops_per_token_ * double(tokens_per_step_) / (cfg_.network.device_flops * cfg_.network.mfu);
    // With one thread per worker the thread's CPU time is its compute time,
    // unaffected by other workers sharing the cores or by waiting in a
    // collective; with more threads only wall time covers the helpers' work.
    auto now = [&] { return threads_ == 1 ? thread_cpu_seconds() : seconds_since(start_); };

    observe_at(w, 0);
    for (int64_t t = 0; t < cfg_.train.steps; ++t) {
      comm.set_step(t);
      if (!strategy->needs_gradient(t)) {
        // No batch drawn, no compute charged: only the strategy's own update.
        strategy->step(t, learning_rate(cfg_.optim, t, cfg_.train.steps));
        observe_at(w, t + 1);
        continue;
      }
      double t0 = 0, t1 = 0;
      at::Tensor loss;
      {
        ComputeSlots::Hold hold(compute_slots_);
        t0 = now();
        Batch batch = stream->next(cfg_.train.batch_size);
        loss = slot.model->loss(batch.first, batch.second);
        loss.backward();
        t1 = now();
      }
      slot.clock.advance_compute(speed_[w] * (flops_mode ? modelled_step : t1 - t0));
      strategy->step(t, learning_rate(cfg_.optim, t, cfg_.train.steps));
      if (!flops_mode) slot.clock.advance_compute(speed_[w] * std::max(0.0, now() - t1));
      const double l = loss.item<double>();
      if (!std::isfinite(l))
        throw std::runtime_error("worker " + std::to_string(w) + ": loss is " + std::to_string(l) +
                                 " at step " + std::to_string(t + 1) + "; lower optim.lr");
      slot.loss_sum += l;
      slot.loss_count += 1;
      slot.last_loss = l;
      observe_at(w, t + 1);
    }
  }

  bool is_eval_step(int64_t step) const {
    return step == 0 || step == cfg_.train.steps ||
           (cfg_.train.eval_every > 0 && step % cfg_.train.eval_every == 0);
  }
  bool is_correlation_step(int64_t step) const {
    const int64_t every = cfg_.strategy.correlation_every;
    return workers_ > 1 && every > 0 && step > 0 && (step % every == 0 || step == cfg_.train.steps);
  }
  bool is_log_step(int64_t step) const {
    return step > 0 && (step % cfg_.train.log_every == 0 || step == cfg_.train.steps ||
                        is_correlation_step(step));
  }

  void observe_at(int64_t, int64_t step) {
    const bool eval = is_eval_step(step), log = is_log_step(step);
    if (!eval && !log) return;
    rendezvous_.arrive([&] { observe(step, log, eval); });
  }

  // Runs on the last worker to arrive; every other worker is parked.
  void observe(int64_t step, bool log, bool eval) {
    const double elapsed = seconds_since(start_);
    const double train_wall = std::max(1e-9, elapsed - eval_wall_);
    double loss = 0, sim_time = 0, compute = 0, blocked = 0, sent = 0, received = 0;
    for (auto& s : slots_) {
      loss += s.loss_count ? s.loss_sum / double(s.loss_count) : 0;
      sim_time = std::max(sim_time, s.clock.now());
      compute += s.clock.compute_seconds();
      blocked += s.clock.blocked_seconds();
      sent += s.comm->ledger().total_sent();
      received += s.comm->ledger().total_received();
      s.loss_sum = 0;
      s.loss_count = 0;
    }
    const double n = double(workers_);
    loss /= n;
    const double tokens = double(step) * double(tokens_per_step_) * n;
    const double tokens_per_s = tokens / train_wall;
    nlohmann::json common = {{"step", step},
                             {"tokens", tokens},
                             {"elapsed_s", elapsed},
                             {"sim_time_s", sim_time},
                             {"compute_s", compute / n},
                             {"blocked_s", blocked / n},
                             {"utilisation", sim_time > 0 ? (compute / n) / sim_time : 1.0},
                             {"bytes_sent_per_worker", sent / n},
                             {"bytes_received_per_worker", received / n}};
    ProgressInfo info;
    info.step = step;
    info.total_steps = cfg_.train.steps;
    info.elapsed_s = elapsed;
    info.tokens_per_s = step > 0 ? tokens_per_s : 0;
    info.sim_time_s = sim_time;
    info.bytes_sent_per_worker = sent / n;
    info.eta_s = step > 0 ? train_wall / double(step) * double(cfg_.train.steps - step) : 0;
    if (log) {
      nlohmann::json e = common;
      e["event"] = "train";
      e["loss"] = loss;
      e["lr"] = learning_rate(cfg_.optim, step - 1, cfg_.train.steps);
      e["tokens_per_s"] = tokens_per_s;
      e["model_flops_per_s"] = tokens_per_s * flops_per_token_;
      // Per-worker bytes per step over this log window (the cumulative figure is in `common`).
      e["bytes_sent_per_worker_per_step"] =
          (sent / n - logged_sent_) / double(std::max<int64_t>(1, step - logged_step_));
      logged_sent_ = sent / n;
      logged_step_ = step;
      if (slots_[0].strategy)
        for (const auto& [key, value] : slots_[0].strategy->stats()) e[key] = value;
      if (is_correlation_step(step)) {
        const auto corr_start = Clock::now();
        std::vector<std::vector<at::Tensor>> params;
        for (const auto& s : slots_) params.push_back(s.params);
        const Correlation c = parameter_correlation(params);
        e["correlation"] = c.mean;
        e["correlation_min"] = c.min;
        e["correlation_ms"] = 1e3 * seconds_since(corr_start);
        last_correlation_ = c.mean;
        eval_wall_ += seconds_since(corr_start);  // like eval: not training time
      }
      log_.write(e);
      last_train_loss_ = loss;
      info.loss = loss;
    }
    if (eval) {
      const auto eval_start = Clock::now();
      nlohmann::json e = common;
      e["event"] = "eval";
      const std::string which = eval_model_kind();
      e["eval_model"] = which;
      e["val_loss"] = evaluate(which);
      e["val_ppl"] = std::exp(e["val_loss"].get<double>());
      if (cfg_.strategy.eval_worker0 && which != "worker0") e["val_loss_worker0"] = evaluate("worker0");
      eval_wall_ += seconds_since(eval_start);
      log_.write(e);
      last_val_loss_ = e["val_loss"].get<double>();
      info.is_eval = true;
    }
    info.loss = last_train_loss_;
    info.val_loss = last_val_loss_;
    if (workers_ > 1 && cfg_.strategy.correlation_every > 0 && step >= cfg_.strategy.correlation_every)
      info.correlation = last_correlation_;
    if (hooks_.progress) hooks_.progress(info);
    if (step == cfg_.train.steps) finish(loss, sim_time, compute / n, sent / n, tokens_per_s);
  }

  std::string eval_model_kind() const {
    const std::string& k = cfg_.strategy.eval_model;
    if (k != "auto") return k;
    return slots_[0].global ? "global" : "average";
  }

  // Mean loss over the fixed evaluation batches of the chosen parameters.
  double evaluate(const std::string& which) {
    at::NoGradGuard no_grad;
    auto dst = eval_model_->parameters();
    if (which == "global") {
      if (!slots_[0].global) throw std::invalid_argument("strategy.eval_model = 'global': " +
                                                         cfg_.strategy.name + " keeps no global model");
      for (size_t k = 0; k < dst.size(); ++k) dst[k].copy_((*slots_[0].global)[k]);
    } else if (which == "worker0") {
      for (size_t k = 0; k < dst.size(); ++k) dst[k].copy_(slots_[0].params[k]);
    } else {
      // Sum in rank order, so the average is bitwise reproducible.
      for (size_t k = 0; k < dst.size(); ++k) {
        at::Tensor acc = slots_[0].params[k].detach().clone();
        for (int64_t w = 1; w < workers_; ++w) acc.add_(slots_[w].params[k].detach());
        dst[k].copy_(acc.div_(double(workers_)));
      }
    }
    eval_model_->eval();
    double total = 0;
    for (const auto& b : data_.eval_batches()) total += eval_model_->loss(b.first, b.second).item<double>();
    return total / double(data_.eval_batches().size());
  }

  void write_start_event() {
    nlohmann::json e = {{"event", "start"},
                        {"strategy", cfg_.strategy.name},
                        {"workers", workers_},
                        {"params", params_},
                        {"flops_per_token", flops_per_token_},
                        {"tokens_per_step_per_worker", tokens_per_step_},
                        {"global_batch_tokens", tokens_per_step_ * workers_},
                        {"token_budget_per_worker", tokens_per_step_ * cfg_.train.steps},
                        {"token_budget_total", tokens_per_step_ * cfg_.train.steps * workers_},
                        {"train_split_size", data_.train_tokens()},
                        {"vocab_size", data_.vocab_size()},
                        {"threads_per_worker", threads_},
                        {"compute_time", cfg_.network.compute_time}};
    log_.write(e);
  }

  void finish(double loss, double sim_time, double compute, double sent, double tokens_per_s) {
    summary_.steps = cfg_.train.steps;
    summary_.workers = workers_;
    summary_.params = params_;
    summary_.final_train_loss = loss;
    summary_.final_val_loss = last_val_loss_;
    summary_.wall_seconds = seconds_since(start_);
    summary_.tokens_per_s = tokens_per_s;
    summary_.model_flops_per_s = tokens_per_s * flops_per_token_;
    summary_.sim_seconds = sim_time;
    summary_.compute_utilisation = sim_time > 0 ? compute / sim_time : 1.0;
    summary_.bytes_sent_per_worker = sent;
    nlohmann::json by_tag = nlohmann::json::object(), per_worker = nlohmann::json::array();
    for (auto& s : slots_) {
      const Ledger& l = s.comm->ledger();
      per_worker.push_back({{"sent", l.total_sent()}, {"received", l.total_received()}, {"ops", l.ops()}});
      for (const auto& [tag, bytes] : l.sent_by_tag()) by_tag[tag] = by_tag.value(tag, 0.0) + bytes;
    }
    nlohmann::json e = {{"event", "end"},
                        {"final_val_loss", last_val_loss_},
                        {"final_train_loss", loss},
                        {"wall_s", summary_.wall_seconds},
                        {"tokens_per_s", tokens_per_s},
                        {"model_flops_per_s", summary_.model_flops_per_s},
                        {"sim_time_s", sim_time},
                        {"compute_utilisation", summary_.compute_utilisation},
                        {"bytes_sent_per_worker", sent},
                        {"final_correlation", workers_ > 1 && cfg_.strategy.correlation_every > 0
                                                  ? nlohmann::json(last_correlation_)
                                                  : nlohmann::json(nullptr)},
                        {"bytes_sent_by_tag_total", by_tag},
                        {"ledger_per_worker", per_worker}};
    log_.write(e);
  }

  Config cfg_;
  MetricsLog& log_;
  TrainHooks hooks_;
  int64_t workers_;
  DataSource data_;
  NetworkModel net_;
  InProcessGroup group_;
  Rendezvous rendezvous_;
  ComputeSlots compute_slots_;
  std::vector<WorkerSlot> slots_;
  std::vector<double> speed_;
  int64_t threads_ = 1;
  std::shared_ptr<Model> eval_model_;
  int64_t params_ = 0;
  double flops_per_token_ = 0;
  int64_t tokens_per_step_ = 0;
  Clock::time_point start_;
  double eval_wall_ = 0;
  double logged_sent_ = 0;  // per-worker bytes sent at the previous train event
  int64_t logged_step_ = 0;
  double last_train_loss_ = 0, last_val_loss_ = -1;
  double last_correlation_ = 1;
  RunSummary summary_;
  std::mutex error_mutex_;
  std::exception_ptr first_error_;
};

RunSummary run_with_log(const Config& cfg, MetricsLog& log, const TrainHooks& hooks) {
  Simulation sim(cfg, log, hooks);
  RunSummary s = sim.run();
  s.events = log.lines();
  return s;
}

}  // namespace

RunSummary simulate(const Config& cfg, const TrainHooks& hooks) {
  throw_if_errors(validate(cfg));
  MetricsLog log("");
  return run_with_log(cfg, log, hooks);
}

RunSummary train(const Config& cfg, const TrainHooks& hooks) {
  throw_if_errors(validate(cfg));
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(cfg.run.out_dir) / cfg.run.name;
  if (fs::exists(dir) && !fs::is_empty(dir)) {
    if (!cfg.run.overwrite)
      throw std::runtime_error("run folder '" + dir.string() +
                               "' already exists; choose another --run.name or pass --run.overwrite=true");
    fs::remove_all(dir);
  }
  fs::create_directories(dir);
  {
    Config resolved = cfg;
    std::ofstream out(dir / "config.toml");
    out << "# resolved configuration of this run\n" << to_toml(resolved);
    if (!out) throw std::runtime_error("cannot write '" + (dir / "config.toml").string() + "'");
  }
  MetricsLog log(dir.string());
  RunSummary s = run_with_log(cfg, log, hooks);
  s.run_dir = dir.string();
  nlohmann::json summary = {{"final_val_loss", s.final_val_loss},
                            {"final_train_loss", s.final_train_loss},
                            {"steps", s.steps},
                            {"workers", s.workers},
                            {"params", s.params},
                            {"wall_s", s.wall_seconds},
                            {"tokens_per_s", s.tokens_per_s},
                            {"model_flops_per_s", s.model_flops_per_s},
                            {"sim_time_s", s.sim_seconds},
                            {"compute_utilisation", s.compute_utilisation},
                            {"bytes_sent_per_worker", s.bytes_sent_per_worker}};
  if (!s.events.empty()) summary["end"] = nlohmann::json::parse(s.events.back());
  std::ofstream(dir / "summary.json") << summary.dump(2) << "\n";
  return s;
}

}  // namespace atl
