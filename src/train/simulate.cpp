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
#include "atoll/report.h"
#include "train/checkpoint.h"
#include "train/cluster.h"
#include "train/correlation.h"
#include "train/driver.h"
#include "train/data_source.h"
#include "train/metrics.h"
#include "train/rendezvous.h"
#include "train/stop_signal.h"
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
  Strategy* strategy = nullptr;                     // owned by the worker loop
  DataSource::Stream* stream = nullptr;             // owned by the worker loop
  VirtualClock clock;
  Communicator* comm = nullptr;
  double loss_sum = 0;
  int64_t loss_count = 0;
  double compute_wall = 0;  // wall seconds of compute (real runs report it)
  std::vector<std::string> events;  // "fault" events (JSON) not yet written to the metrics

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
    r.events = events;
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
         int64_t threads_per_worker_hint, const CheckpointPlan& plan)
      : cfg_(cfg),
        plan_(plan),
        store_(plan.run_dir),
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
    speed_changes_ = parse_speed_schedule(cfg.faults.speed_schedule);
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
    trajectory_ = trajectory_config(cfg);
    if (resuming() && cluster.is_leader()) {
      const CheckpointRecords records = store_.read(plan.resume_step, "driver");
      StateReader reader(records, store_.file(plan.resume_step, "driver").string());
      visit_meta(reader, plan.resume_step, -1);
      visit_observer(reader);
      reader.expect_all_read();
    }
  }

  RunSummary run() {
    tune_allocator();
    start_ = Clock::now();
    if (cluster_.is_leader() && !resuming()) write_start_event();
    if (slots_.size() == 1) {
      guarded_worker(slots_[0]);  // a real rank: its worker runs on this thread
    } else {
      std::vector<std::thread> threads;
      for (auto& slot : slots_) threads.emplace_back([this, &slot] { guarded_worker(slot); });
      for (auto& t : threads) t.join();
    }
    if (first_error_) std::rethrow_exception(first_error_);
    summary_.stopped_at = stopped_at_;
    summary_.stopped_by_signal = stopped_at_ >= 0 && stop_requested();
    if (stopped_at_ >= 0 && !plan_.run_dir.empty())
      summary_.checkpoint = store_.file(stopped_at_, "driver").parent_path().string();
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
    slot.stream = stream.get();
    const int64_t first_step = resuming() ? plan_.resume_step : 0;
    if (resuming()) load_worker(slot);
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

    if (!resuming()) observe_at(0);
    for (int64_t t = first_step; t < cfg_.train.steps; ++t) {
      comm.set_step(t);
      const Clock::time_point wall0 = Clock::now();
      const double comm0 = cluster_.measured_comm_seconds(w);
      if (!strategy->needs_gradient(t)) {
        // No batch drawn, no compute charged: only the strategy's own update.
        strategy->step(t, learning_rate(cfg_.optim, t, cfg_.train.steps));
        slot.compute_wall += wall_compute(wall0, comm0);
        if (observe_at(t + 1)) break;
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
      const double speed = speed_at(slot, t);
      slot.clock.advance_compute(speed * (flops_mode ? modelled_step : t1 - t0));
      strategy->step(t, learning_rate(cfg_.optim, t, cfg_.train.steps));
      if (!flops_mode) slot.clock.advance_compute(speed * std::max(0.0, now() - t1));
      slot.compute_wall += wall_compute(wall0, comm0);
      const double l = loss.item<double>();
      if (!std::isfinite(l))
        throw std::runtime_error("worker " + std::to_string(w) + ": loss is " + std::to_string(l) +
                                 " at step " + std::to_string(t + 1) + "; lower optim.lr");
      slot.loss_sum += l;
      slot.loss_count += 1;
      if (observe_at(t + 1)) break;
    }
    slot.strategy = nullptr;  // the objects die with this frame
    slot.stream = nullptr;
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

  // Worker w's compute-time factor at step t: network.speed_factors, then
  // the faults.speed_schedule changes up to t (each logged when it happens).
  double speed_at(WorkerSlot& slot, int64_t t) {
    double factor = speed_[slot.rank];
    for (const auto& change : speed_changes_) {
      if (change.step > t) break;
      if (change.worker != slot.rank) continue;
      factor = change.factor;
      if (change.step == t)
        slot.events.push_back(fault_event(t, slot.rank, "speed", "compute-time factor " + std::to_string(factor)));
    }
    return factor;
  }

  static std::string fault_event(int64_t step, int64_t worker, const std::string& kind, const std::string& detail) {
    return nlohmann::json{{"event", "fault"}, {"step", step}, {"worker", worker}, {"kind", kind}, {"detail", detail}}
        .dump();
  }

  bool is_checkpoint_step(int64_t step) const {
    if (step >= cfg_.train.steps) return false;  // the run is complete: nothing to resume
    const int64_t every = cfg_.run.checkpoint_every;
    return step > 0 && ((every > 0 && step % every == 0) || step == cfg_.run.stop_at);
  }

  // Parks this worker at an observation step (log, eval or checkpoint);
  // the last local worker to arrive runs the observer. Returns true when the
  // run stops here (a signal, or run.stop_at): every worker of every
  // process gets the same answer, after the checkpoint is written.
  bool observe_at(int64_t step) {
    const bool eval = is_eval_step(step), log = is_log_step(step), checkpoint = is_checkpoint_step(step);
    if (!eval && !log && !checkpoint) return false;
    cluster_.meet([&] {
      for (auto& s : slots_)  // the strategies' events since the last meeting
        for (const auto& e : s.strategy->take_events())
          s.events.push_back(fault_event(e.step, s.rank, e.kind, e.detail));
      if (eval || log) observe(step, log, eval);
      // Every process takes part in the same observer collectives.
      const bool stop = step < cfg_.train.steps &&
                        cluster_.any((cfg_.run.stop_at > 0 && step == cfg_.run.stop_at) || stop_requested());
      if (checkpoint || stop) write_checkpoint(step);
      if (stop) stopped_at_ = step;
      cluster_.observed();
    });
    return stopped_at_ >= 0;
  }

  bool resuming() const { return plan_.resume_step >= 0; }

  // What identifies a run's checkpoint: its step, the worker, and the
  // settings that shape the trajectory.
  void visit_meta(StateVisitor& v, int64_t step, int64_t rank) {
    int64_t saved_step = step, saved_rank = rank;
    std::string config = trajectory_;
    v.integer("meta.step", saved_step);
    v.integer("meta.rank", saved_rank);
    v.text("meta.config", config);
    if (!v.loading()) return;
    if (config != trajectory_)
      throw CheckpointError("the checkpoint of step " + std::to_string(step) + " was written with other settings: " +
                            config_difference(config, trajectory_) +
                            "; resume with the settings it was written with, or start a new run");
    if (saved_step != step || saved_rank != rank)
      throw CheckpointError("checkpoint file of step " + std::to_string(saved_step) + ", worker " +
                            std::to_string(saved_rank) + " is filed as step " + std::to_string(step) +
                            (rank >= 0 ? ", worker " + std::to_string(rank) : std::string()));
  }

  // Everything a worker carries from one step to the next.
  void visit_worker(StateVisitor& v, WorkerSlot& slot) {
    {
      StateVisitor::Scope scope(v, "model");
      for (auto& item : slot.model->named_parameters()) v.tensor(item.key(), item.value());
      for (auto& item : slot.model->named_buffers()) v.tensor("buffer." + item.key(), item.value());
    }
    {
      StateVisitor::Scope scope(v, "strategy");
      slot.strategy->visit_state(v);
    }
    int64_t position = static_cast<int64_t>(slot.stream->position());
    v.integer("data.position", position);
    if (v.loading()) slot.stream->seek(static_cast<uint64_t>(position));
    double now = slot.clock.now(), compute = slot.clock.compute_seconds(), blocked = slot.clock.blocked_seconds();
    v.real("clock.now", now);
    v.real("clock.compute", compute);
    v.real("clock.blocked", blocked);
    if (v.loading()) slot.clock.restore(now, compute, blocked);
    slot.comm->visit_state(v);
    v.real("loss_sum", slot.loss_sum);
    v.integer("loss_count", slot.loss_count);
    v.real("compute_wall", slot.compute_wall);
    std::string events;
    for (const auto& e : slot.events) events += e + "\n";
    v.text("events", events);
    if (v.loading()) {
      slot.events.clear();
      for (size_t start = 0, end; (end = events.find('\n', start)) != std::string::npos; start = end + 1)
        slot.events.push_back(events.substr(start, end - start));
    }
  }

  // The leader's observer state (running figures between log lines).
  void visit_observer(StateVisitor& v) {
    StateVisitor::Scope scope(v, "observer");
    double elapsed = elapsed_offset_ + (v.loading() ? 0.0 : seconds_since(start_));
    v.real("elapsed", elapsed);
    if (v.loading()) elapsed_offset_ = elapsed;
    v.real("eval_wall", eval_wall_);
    v.real("logged_sent", logged_sent_);
    v.integer("logged_step", logged_step_);
    v.real("last_train_loss", last_train_loss_);
    v.real("last_val_loss", last_val_loss_);
    v.real("last_correlation", last_correlation_);
    v.integer("outages_logged", outages_logged_);
    int64_t jsonl = static_cast<int64_t>(log_.jsonl_bytes()), csv = static_cast<int64_t>(log_.csv_bytes());
    v.integer("metrics.jsonl_bytes", jsonl);  // read by train() before the log reopens
    v.integer("metrics.csv_bytes", csv);
  }

  void load_worker(WorkerSlot& slot) {
    const std::string part = worker_part(slot.rank);
    const CheckpointRecords records = store_.read(plan_.resume_step, part);
    StateReader reader(records, store_.file(plan_.resume_step, part).string());
    visit_meta(reader, plan_.resume_step, slot.rank);
    visit_worker(reader, slot);
    reader.expect_all_read();
  }

  // Runs in the observer while every local worker is parked between steps.
  void write_checkpoint(int64_t step) {
    if (plan_.run_dir.empty()) return;  // simulate(): no run folder
    for (auto& slot : slots_) {
      StateWriter writer;
      visit_meta(writer, step, slot.rank);
      visit_worker(writer, slot);
      store_.write(step, worker_part(slot.rank), writer.records());
    }
    if (cluster_.is_leader()) {
      StateWriter writer;
      visit_meta(writer, step, -1);
      visit_observer(writer);
      store_.write(step, "driver", writer.records());
    }
    // Only once every process has its files does an older checkpoint go.
    cluster_.any(false);
    if (cluster_.is_leader()) store_.prune(cfg_.run.keep_checkpoints);
  }

  // Runs once per process while its local workers are parked. Every process
  // takes part in the cluster's observer collectives; only the leader
  // computes correlation and evaluation, logs and reports progress.
  void observe(int64_t step, bool log, bool eval) {
    const bool leader = cluster_.is_leader();
    const double elapsed = elapsed_offset_ + seconds_since(start_);
    const double train_wall = std::max(1e-9, elapsed - eval_wall_);
    std::vector<WorkerReport> local;
    for (auto& s : slots_) {
      local.push_back(s.report(cluster_.measured_comm_seconds(s.rank)));
      s.loss_sum = 0;
      s.loss_count = 0;
      s.events.clear();
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
    for (const auto& r : reports_)  // rank order
      for (const auto& e : r.events) log_.write(nlohmann::json::parse(e));
    log_outages(step, sim_time);
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

  // A "fault" event for each link outage the simulated clock has reached.
  void log_outages(int64_t step, double sim_time) {
    const auto& outages = net_.outages();
    for (; outages_logged_ < int64_t(outages.size()); ++outages_logged_) {
      const Outage& o = outages[size_t(outages_logged_)];
      if (o.from > sim_time) break;
      log_.write(nlohmann::json::parse(fault_event(step, o.worker, "outage",
                                                   "link down from " + format_number("%g", o.from) + " s to " +
                                                       format_number("%g", o.to) + " s (simulated)")));
    }
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
  CheckpointPlan plan_;
  CheckpointStore store_;
  std::string trajectory_;  // trajectory_config(cfg_): checkpoints must match it
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
  std::vector<SpeedChange> speed_changes_;
  int64_t outages_logged_ = 0;  // network outages (in time order) already in the metrics
  std::vector<WorkerReport> reports_;  // every worker's, from the latest observation
  std::shared_ptr<Model> eval_model_;
  int64_t params_ = 0;
  double flops_per_token_ = 0;
  int64_t tokens_per_step_ = 0;
  Clock::time_point start_;
  double eval_wall_ = 0;
  double elapsed_offset_ = 0;  // wall seconds before the checkpoint this run resumed from
  int64_t stopped_at_ = -1;    // set by the observer when the run stops early
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
  bool any(bool mine) override { return mine; }
  void abort(const std::string& why) override {
    group_.abort(why);
    rendezvous_.abort();
  }

 private:
  InProcessGroup group_;
  Rendezvous rendezvous_;
};

RunSummary run_with_log(const Config& cfg, MetricsLog& log, const TrainHooks& hooks, const CheckpointPlan& plan = {}) {
  SimCluster cluster(cfg.strategy.workers, parse_algorithm(cfg.network.algorithm));
  RunSummary s = run_on_cluster(cfg, cluster, log, hooks, threads_per_worker(cfg.run.threads, cfg.strategy.workers), plan);
  s.events = log.lines();
  return s;
}

}  // namespace

nlohmann::json WorkerReport::to_json() const {
  return {{"loss_sum", loss_sum}, {"loss_count", loss_count}, {"sim_now", sim_now},
          {"compute_s", compute_s}, {"blocked_s", blocked_s}, {"sent", sent},
          {"received", received}, {"ops", ops}, {"network_model_s", network_model_s},
          {"comm_wall_s", comm_wall_s}, {"compute_wall_s", compute_wall_s}, {"sent_by_tag", sent_by_tag},
          {"events", events}};
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
  r.events = j.at("events").get<std::vector<std::string>>();
  return r;
}

RunSummary run_on_cluster(const Config& cfg, Cluster& cluster, MetricsLog& log, const TrainHooks& hooks,
                          int64_t threads_per_worker_hint, const CheckpointPlan& plan) {
  Driver driver(cfg, cluster, log, hooks, threads_per_worker_hint, plan);
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

int64_t find_resume_step(const Config& cfg, const std::filesystem::path& dir, const std::vector<std::string>& parts) {
  namespace fs = std::filesystem;
  const fs::path config_path = dir / "config.toml";
  if (!fs::is_regular_file(config_path))
    throw std::runtime_error("cannot resume: '" + dir.string() + "' holds no run (no config.toml); start it without " +
                             "--run.resume");
  if (fs::exists(dir / "summary.json"))
    throw std::runtime_error("cannot resume: the run in '" + dir.string() + "' has finished (summary.json); " +
                             "start a new one with another --run.name, or replace it with --run.overwrite=true");
  Config started;
  try {
    started = load_config(config_path.string(), {});
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot resume: '" + config_path.string() + "' does not load: " + e.what());
  }
  const std::string now = trajectory_config(cfg), then = trajectory_config(started);
  if (now != then)
    throw std::runtime_error("cannot resume '" + dir.string() + "': it was started with other settings (" +
                             config_difference(then, now, "when it started") + "); resume with the same config and overrides");
  const CheckpointStore store(dir);
  std::vector<std::string> skipped;
  const int64_t step = store.latest_complete(parts, &skipped);
  if (step < 0) {
    std::string why;
    for (const auto& s : skipped) why += "\n  " + s;
    throw std::runtime_error("cannot resume '" + dir.string() + "': no complete checkpoint in " +
                             store.folder().string() + (why.empty() ? std::string(" (none written)") : ":" + why) +
                             "\nset run.checkpoint_every to write them, or start again with --run.overwrite=true");
  }
  // A checkpoint copied in from another run is refused before anything changes.
  for (const auto& part : parts) {
    const CheckpointRecords r = store.read(step, part);
    auto it = r.find("meta.config");
    if (it == r.end() || it->second.text != now)
      throw CheckpointError("cannot resume '" + dir.string() + "': " + store.file(step, part).string() +
                            " was written with other settings (" +
                            config_difference(it == r.end() ? std::string() : it->second.text, now) + ")");
  }
  return step;
}

std::unique_ptr<MetricsLog> reopen_for_resume(const std::filesystem::path& dir, int64_t step) {
  const CheckpointStore store(dir);
  const CheckpointRecords r = store.read(step, "driver");
  auto size = [&](const std::string& key) {
    auto it = r.find("observer." + key);
    if (it == r.end() || it->second.kind != RecordKind::Integer || it->second.integer < 0)
      throw CheckpointError(store.file(step, "driver").string() + " lacks the metrics sizes");
    return static_cast<uint64_t>(it->second.integer);
  };
  auto log = std::make_unique<MetricsLog>(dir.string(), size("metrics.jsonl_bytes"), size("metrics.csv_bytes"));
  store.remove_after(step);
  return log;
}

namespace {
// The files of one checkpoint step of a simulated run.
std::vector<std::string> simulation_parts(const Config& cfg) {
  std::vector<std::string> parts = {"driver"};
  for (int64_t r = 0; r < cfg.strategy.workers; ++r) parts.push_back(worker_part(r));
  return parts;
}
}  // namespace

int64_t latest_checkpoint(const Config& cfg, int64_t rank) {
  const std::vector<std::string> parts = rank >= 0 ? std::vector<std::string>{worker_part(rank)} : simulation_parts(cfg);
  return CheckpointStore(std::filesystem::path(cfg.run.out_dir) / cfg.run.name).latest_complete(parts, nullptr);
}

int64_t resumable_step(const Config& cfg, std::string* why) {
  try {
    return find_resume_step(cfg, std::filesystem::path(cfg.run.out_dir) / cfg.run.name, simulation_parts(cfg));
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return -1;
  }
}

RunSummary train(const Config& cfg, const TrainHooks& hooks) {
  throw_if_errors(validate(cfg));
  CheckpointPlan plan;
  std::unique_ptr<MetricsLog> log;
  if (cfg.run.resume) {
    plan.run_dir = std::filesystem::path(cfg.run.out_dir) / cfg.run.name;
    plan.resume_step = find_resume_step(cfg, plan.run_dir, simulation_parts(cfg));
    log = reopen_for_resume(plan.run_dir, plan.resume_step);
  } else {
    plan.run_dir = create_run_folder(cfg);
    log = std::make_unique<MetricsLog>(plan.run_dir.string());
  }
  StopSignalScope signals;
  RunSummary s;
  try {
    s = run_with_log(cfg, *log, hooks, plan);
  } catch (...) {
    // A new run that failed before its first logged step (unreadable data,
    // say) leaves no folder behind to block the corrected command.
    if (!cfg.run.resume && log->lines().size() <= 1 && CheckpointStore(plan.run_dir).steps().empty()) {
      log.reset();
      std::error_code ec;
      std::filesystem::remove_all(plan.run_dir, ec);
    }
    throw;
  }
  s.run_dir = plan.run_dir.string();
  if (s.stopped_at < 0) write_summary(plan.run_dir, s);
  return s;
}

}  // namespace atl
