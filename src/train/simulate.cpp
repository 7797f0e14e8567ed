// The shared driver: the worker loop every worker runs and the observer
// (logging, evaluation, correlation), over a Cluster. simulate() puts all N
// workers in threads of this process, joined by an InProcessGroup, with a
// Rendezvous for the observer that never touches the ledger or clocks; real
// runs (distributed.cpp) put one worker in each process.
#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <cstdio>
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
#include "train/cluster.h"
#include "train/correlation.h"
#include "train/driver.h"
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

// One local worker's state, read by the observer while the worker is parked.
struct WorkerSlot {
  int64_t rank = 0;
  std::shared_ptr<Model> model;
  std::vector<at::Tensor> params;
  const std::vector<at::Tensor>* global = nullptr;  // strategy's global model, if any
  const Strategy* strategy = nullptr;
  VirtualClock clock;
  Communicator* comm = nullptr;
  double loss_sum = 0;
  int64_t loss_count = 0;
  double compute_wall = 0;  // wall seconds of compute (real runs report it)

  WorkerReport report(double comm_wall) const {
    WorkerReport r;
    r.loss_sum = loss_sum;
    r.loss_count = loss_count;
    r.sim_now = clock.now();
    r.compute_s = clock.compute_seconds();
    r.blocked_s = clock.blocked_seconds();
    const Ledger& l = comm->ledger();
    r.sent = l.total_sent();
    r.received = l.total_received();
    r.ops = l.ops();
    r.network_model_s = l.total_network_seconds();
    r.comm_wall_s = comm_wall;
    r.compute_wall_s = compute_wall;
    r.sent_by_tag = l.sent_by_tag();
    return r;
  }
};

// FNV-1a over the raw bytes of every tensor, as 16 hex digits.
std::string parameter_hash(const std::vector<at::Tensor>& tensors) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& t : tensors) {
    const at::Tensor c = t.detach().contiguous();
    const auto* p = static_cast<const uint8_t*>(c.data_ptr());
    for (size_t i = 0, n = c.numel() * c.element_size(); i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

class Driver {
 public:
  Driver(const Config& cfg, Cluster& cluster, MetricsLog& log, const TrainHooks& hooks,
         int64_t threads_per_worker_hint)
      : cfg_(cfg),
        cluster_(cluster),
        log_(log),
        hooks_(hooks),
        workers_(cluster.world()),
        data_(cfg),
        net_(NetworkModel::from_config(cfg.network, workers_, static_cast<uint64_t>(cfg.run.seed))),
        threads_(threads_per_worker_hint),
        compute_slots_(std::max<int64_t>(1, available_cores() / threads_)) {
    speed_ = parse_number_list(cfg.network.speed_factors, 1.0);  // checked by validate()
    speed_.resize(workers_, 1.0);
    // Every worker starts from bit-identical parameters: same seed, same init.
    const uint64_t init_seed = static_cast<uint64_t>(cfg.run.seed);
    for (int64_t r : cluster.local_ranks()) {
      WorkerSlot slot;
      slot.rank = r;
      slot.model = make_model(cfg.model, data_.vocab_size(), init_seed);
      slot.params = slot.model->parameters();
      slot.comm = &cluster.comm(r);
      slots_.push_back(std::move(slot));
    }
    eval_model_ = make_model(cfg.model, data_.vocab_size(), init_seed);
    params_ = eval_model_->num_params();
    flops_per_token_ = eval_model_->flops_per_token();
    tokens_per_step_ = cfg.train.batch_size * eval_model_->tokens_per_example();
  }

  RunSummary run() {
    tune_allocator();
    start_ = Clock::now();
    if (cluster_.is_leader()) write_start_event();
    if (slots_.size() == 1) {
      guarded_worker(slots_[0]);  // a real rank: its worker runs on this thread
    } else {
      std::vector<std::thread> threads;
      for (auto& slot : slots_) threads.emplace_back([this, &slot] { guarded_worker(slot); });
      for (auto& t : threads) t.join();
    }
    if (first_error_) std::rethrow_exception(first_error_);
    return summary_;
  }

 private:
  void guarded_worker(WorkerSlot& slot) {
    try {
      worker(slot);
    } catch (const std::exception& e) {
      record_error("worker " + std::to_string(slot.rank) + " failed: " + e.what());
    } catch (...) {
      record_error("worker " + std::to_string(slot.rank) + " failed");
    }
  }
  void record_error(const std::string& why) {
    std::lock_guard<std::mutex> lock(error_mutex_);
    // Keep the root cause: errors caused by the abort itself come second.
    if (!first_error_) {
      first_error_ = std::current_exception();
      cluster_.abort(why);
    }
  }

  // The worker loop: the same sequence for a simulated and a real worker.
  void worker(WorkerSlot& slot) {
    set_compute_threads(threads_);
    const int64_t w = slot.rank;
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
    // Wall time of compute, net of the communication inside a strategy step.
    auto wall_compute = [&](Clock::time_point from, double comm_before) {
      return seconds_since(from) - (cluster_.measured_comm_seconds(w) - comm_before);
    };

    observe_at(0);
    for (int64_t t = 0; t < cfg_.train.steps; ++t) {
      comm.set_step(t);
      const Clock::time_point wall0 = Clock::now();
      const double comm0 = cluster_.measured_comm_seconds(w);
      if (!strategy->needs_gradient(t)) {
        // No batch drawn, no compute charged: only the strategy's own update.
        strategy->step(t, learning_rate(cfg_.optim, t, cfg_.train.steps));
        slot.compute_wall += wall_compute(wall0, comm0);
        observe_at(t + 1);
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
      slot.compute_wall += wall_compute(wall0, comm0);
      const double l = loss.item<double>();
      if (!std::isfinite(l))
        throw std::runtime_error("worker " + std::to_string(w) + ": loss is " + std::to_string(l) +
                                 " at step " + std::to_string(t + 1) + "; lower optim.lr");
      slot.loss_sum += l;
      slot.loss_count += 1;
      observe_at(t + 1);
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

  void observe_at(int64_t step) {
    const bool eval = is_eval_step(step), log = is_log_step(step);
    if (!eval && !log) return;
    cluster_.meet([&] {
      observe(step, log, eval);
      cluster_.observed();
    });
  }

  // Runs once per process while its local workers are parked. Every process
  // takes part in the cluster's observer collectives; only the leader
  // computes correlation and evaluation, logs and reports progress.
  void observe(int64_t step, bool log, bool eval) {
    const bool leader = cluster_.is_leader();
    const double elapsed = seconds_since(start_);
    const double train_wall = std::max(1e-9, elapsed - eval_wall_);
    std::vector<WorkerReport> local;
    for (auto& s : slots_) {
      local.push_back(s.report(cluster_.measured_comm_seconds(s.rank)));
      s.loss_sum = 0;
      s.loss_count = 0;
    }
    reports_ = cluster_.reports(local);
    const std::string which = eval_model_kind();
    const bool correlation = log && is_correlation_step(step);
    const bool last = step == cfg_.train.steps;  // the end event fingerprints every worker
    const bool need_params =
        last || correlation || (eval && (which != "global" || cfg_.strategy.eval_worker0));
    std::vector<std::vector<at::Tensor>> params;
    if (need_params) {
      std::vector<std::vector<at::Tensor>> mine;
      for (const auto& s : slots_) mine.push_back(s.params);
      params = cluster_.params(mine);
    }
    if (!leader) return;

    double loss = 0, sim_time = 0, compute = 0, blocked = 0, sent = 0, received = 0;
    for (const auto& r : reports_) {
      loss += r.loss_count ? r.loss_sum / double(r.loss_count) : 0;
      sim_time = std::max(sim_time, r.sim_now);
      compute += r.compute_s;
      blocked += r.blocked_s;
      sent += r.sent;
      received += r.received;
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
      if (correlation) {
        const auto corr_start = Clock::now();
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
      e["eval_model"] = which;
      e["val_loss"] = evaluate(which, params);
      e["val_ppl"] = std::exp(e["val_loss"].get<double>());
      if (cfg_.strategy.eval_worker0 && which != "worker0") e["val_loss_worker0"] = evaluate("worker0", params);
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
    if (last) finish(loss, sim_time, compute / n, sent / n, tokens_per_s, params);
  }

  std::string eval_model_kind() const {
    const std::string& k = cfg_.strategy.eval_model;
    if (k != "auto") return k;
    return slots_[0].global ? "global" : "average";
  }

  // Mean loss over the fixed evaluation batches of the chosen parameters;
  // `params` holds every worker's parameters in rank order (unless global).
  double evaluate(const std::string& which, const std::vector<std::vector<at::Tensor>>& params) {
    at::NoGradGuard no_grad;
    auto dst = eval_model_->parameters();
    if (which == "global") {
      if (!slots_[0].global) throw std::invalid_argument("strategy.eval_model = 'global': " +
                                                         cfg_.strategy.name + " keeps no global model");
      for (size_t k = 0; k < dst.size(); ++k) dst[k].copy_((*slots_[0].global)[k]);
    } else if (which == "worker0") {
      for (size_t k = 0; k < dst.size(); ++k) dst[k].copy_(params[0][k]);
    } else {
      // Sum in rank order, so the average is bitwise reproducible.
      for (size_t k = 0; k < dst.size(); ++k) {
        at::Tensor acc = params[0][k].detach().clone();
        for (int64_t w = 1; w < workers_; ++w) acc.add_(params[w][k].detach());
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
                        {"compute_time", cfg_.network.compute_time},
                        {"mode", cluster_.real() ? "real" : "simulated"}};
    log_.write(e);
  }

  void finish(double loss, double sim_time, double compute, double sent, double tokens_per_s,
              const std::vector<std::vector<at::Tensor>>& params) {
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
    double comm_wall = 0, compute_wall = 0, network_model = 0;
    for (const auto& r : reports_) {
      nlohmann::json w = {{"sent", r.sent}, {"received", r.received}, {"ops", r.ops},
                          {"network_model_s", r.network_model_s}};
      if (real_run()) {
        w["comm_wall_s"] = r.comm_wall_s;
        w["compute_wall_s"] = r.compute_wall_s;
      }
      per_worker.push_back(w);
      for (const auto& [tag, bytes] : r.sent_by_tag) by_tag[tag] = by_tag.value(tag, 0.0) + bytes;
      comm_wall += r.comm_wall_s;
      compute_wall += r.compute_wall_s;
      network_model += r.network_model_s;
    }
    const double n = double(workers_);
    nlohmann::json e = {{"event", "end"},
                        {"final_val_loss", last_val_loss_},
                        {"final_train_loss", loss},
                        {"wall_s", summary_.wall_seconds},
                        {"tokens_per_s", tokens_per_s},
                        {"model_flops_per_s", summary_.model_flops_per_s},
                        {"sim_time_s", sim_time},
                        {"compute_utilisation", summary_.compute_utilisation},
                        {"bytes_sent_per_worker", sent},
                        {"network_model_s_per_worker", network_model / n},
                        {"final_correlation", workers_ > 1 && cfg_.strategy.correlation_every > 0
                                                  ? nlohmann::json(last_correlation_)
                                                  : nlohmann::json(nullptr)},
                        {"bytes_sent_by_tag_total", by_tag},
                        {"ledger_per_worker", per_worker}};
    // Bitwise fingerprints of every worker's final parameters: equal runs
    // (simulated against real, resumed against uninterrupted) have equal hashes.
    nlohmann::json hashes = nlohmann::json::array();
    for (const auto& worker : params) hashes.push_back(parameter_hash(worker));
    e["params_hash_per_worker"] = hashes;
    summary_.network_model_seconds = network_model / n;
    if (real_run()) {
      summary_.comm_wall_seconds = comm_wall / n;
      // Measured next to the ledger's bytes and the network model's prediction.
      e["comm_wall_s_per_worker"] = comm_wall / n;
      e["compute_wall_s_per_worker"] = compute_wall / n;
    }
    log_.write(e);
  }

  bool real_run() const { return cluster_.real(); }

  Config cfg_;
  Cluster& cluster_;
  MetricsLog& log_;
  TrainHooks hooks_;
  int64_t workers_;
  DataSource data_;
  NetworkModel net_;
  int64_t threads_ = 1;
  ComputeSlots compute_slots_;
  std::vector<WorkerSlot> slots_;
  std::vector<double> speed_;
  std::vector<WorkerReport> reports_;  // every worker's, from the latest observation
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

// All N workers as threads of this process.
class SimCluster final : public Cluster {
 public:
  SimCluster(int64_t n, CollectiveAlgo algo) : group_(n, algo), rendezvous_(n) {}
  int64_t world() const override { return group_.size(); }
  std::vector<int64_t> local_ranks() const override {
    std::vector<int64_t> r(group_.size());
    for (int64_t i = 0; i < group_.size(); ++i) r[i] = i;
    return r;
  }
  Communicator& comm(int64_t rank) override { return group_.rank(rank); }
  bool is_leader() const override { return true; }
  bool real() const override { return false; }
  void meet(const std::function<void()>& observe) override { rendezvous_.arrive(observe); }
  std::vector<WorkerReport> reports(const std::vector<WorkerReport>& local) override { return local; }
  std::vector<std::vector<at::Tensor>> params(const std::vector<std::vector<at::Tensor>>& local) override {
    return local;
  }
  double measured_comm_seconds(int64_t) const override { return 0; }
  void abort(const std::string& why) override {
    group_.abort(why);
    rendezvous_.abort();
  }

 private:
  InProcessGroup group_;
  Rendezvous rendezvous_;
};

RunSummary run_with_log(const Config& cfg, MetricsLog& log, const TrainHooks& hooks) {
  SimCluster cluster(cfg.strategy.workers, parse_algorithm(cfg.network.algorithm));
  RunSummary s = run_on_cluster(cfg, cluster, log, hooks, threads_per_worker(cfg.run.threads, cfg.strategy.workers));
  s.events = log.lines();
  return s;
}

}  // namespace

nlohmann::json WorkerReport::to_json() const {
  return {{"loss_sum", loss_sum}, {"loss_count", loss_count}, {"sim_now", sim_now},
          {"compute_s", compute_s}, {"blocked_s", blocked_s}, {"sent", sent},
          {"received", received}, {"ops", ops}, {"network_model_s", network_model_s},
          {"comm_wall_s", comm_wall_s}, {"compute_wall_s", compute_wall_s}, {"sent_by_tag", sent_by_tag}};
}

WorkerReport WorkerReport::from_json(const nlohmann::json& j) {
  WorkerReport r;
  r.loss_sum = j.at("loss_sum");
  r.loss_count = j.at("loss_count");
  r.sim_now = j.at("sim_now");
  r.compute_s = j.at("compute_s");
  r.blocked_s = j.at("blocked_s");
  r.sent = j.at("sent");
  r.received = j.at("received");
  r.ops = j.at("ops");
  r.network_model_s = j.at("network_model_s");
  r.comm_wall_s = j.at("comm_wall_s");
  r.compute_wall_s = j.at("compute_wall_s");
  r.sent_by_tag = j.at("sent_by_tag").get<std::map<std::string, double>>();
  return r;
}

RunSummary run_on_cluster(const Config& cfg, Cluster& cluster, MetricsLog& log, const TrainHooks& hooks,
                          int64_t threads_per_worker_hint) {
  Driver driver(cfg, cluster, log, hooks, threads_per_worker_hint);
  return driver.run();
}

std::filesystem::path create_run_folder(const Config& cfg) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(cfg.run.out_dir) / cfg.run.name;
  if (fs::exists(dir) && !fs::is_empty(dir)) {
    if (!cfg.run.overwrite)
      throw std::runtime_error("run folder '" + dir.string() +
                               "' already exists; choose another --run.name or pass --run.overwrite=true");
    fs::remove_all(dir);
  }
  fs::create_directories(dir);
  Config resolved = cfg;  // to_toml visits fields through non-const references
  std::ofstream out(dir / "config.toml");
  out << "# resolved configuration of this run\n" << to_toml(resolved);
  if (!out) throw std::runtime_error("cannot write '" + (dir / "config.toml").string() + "'");
  return dir;
}

void write_summary(const std::filesystem::path& dir, const RunSummary& s) {
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
}

RunSummary simulate(const Config& cfg, const TrainHooks& hooks) {
  throw_if_errors(validate(cfg));
  MetricsLog log("");
  return run_with_log(cfg, log, hooks);
}

RunSummary train(const Config& cfg, const TrainHooks& hooks) {
  throw_if_errors(validate(cfg));
  const auto dir = create_run_folder(cfg);
  MetricsLog log(dir.string());
  RunSummary s = run_with_log(cfg, log, hooks);
  s.run_dir = dir.string();
  write_summary(dir, s);
  return s;
}

}  // namespace atl
