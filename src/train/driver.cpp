// The worker loop, its observation meetings and its checkpoints.
#include "train/driver.h"

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "atoll/model.h"
#include "atoll/net.h"
#include "atoll/strategy.h"
#include "model/export.h"
#include "model/gemm.h"
#include "model/precision.h"
#include "net/devices.h"
#include "strategy/baselines.h"
#include "strategy/inner_optimizer.h"
#include "train/checkpoint.h"
#include "train/data_source.h"
#include "train/divergence_check.h"
#include "train/gemm_choice.h"
#include "train/gradients.h"
#include "train/observer.h"
#include "train/rendezvous.h"
#include "train/schedule.h"
#include "train/stop_signal.h"
#include "train/threads.h"
#include "train/timing_files.h"
#include "train/worker_networks.h"
#include "train/worker_slot.h"
#include "util/format.h"
#include "util/rng.h"
#include "util/wall_time.h"

namespace atl {
namespace {

// A worker checkpoint's record of its process's GEMM routes (train.gemm = auto).
constexpr const char* kGemmRoutesRecord = "gemm.routes";

using Clock = WallClock;

class Driver {
 public:
  Driver(const Config& cfg, Cluster& cluster, MetricsLog& log, const TrainHooks& hooks, int64_t threads_per_worker_hint,
         const CheckpointPlan& plan)
      : cfg_(cfg),
        schedule_(cfg),
        plan_(plan),
        store_(plan.run_dir),
        cluster_(cluster),
        workers_(cluster.world()),
        data_(cfg),
        networks_(cfg),
        layout_(networks_.layout),
        observer_(cfg, log, hooks, data_, networks_.flat, cluster.real()),
        threads_(threads_per_worker_hint),
        compute_slots_(std::max<int64_t>(1, available_cores() / threads_)) {
    // The strategy runs between islands: to it, each island is one worker.
    strategy_cfg_ = cfg;
    strategy_cfg_.strategy.workers = layout_.islands;
    require_precision_supported(cfg.train.precision);            // before any model is built
    speed_ = parse_number_list(cfg.network.speed_factors, 1.0);  // checked by validate()
    speed_.resize(workers_, 1.0);
    speed_changes_ = parse_speed_schedule(cfg.faults.speed_schedule);
    // Every worker starts from bit-identical parameters: same seed, same init.
    const uint64_t init_seed = static_cast<uint64_t>(cfg.run.seed);
    for (int64_t r : cluster.local_ranks()) {
      WorkerSlot slot;
      slot.rank = r;
      slot.model = make_model(cfg.model, data_.vocab_size(), init_seed, data_.tokens_per_example());
      slot.params = slot.model->parameters();
      slot.comm = &cluster.comm(r);
      slot.island_comm = cluster.island_comm(r);
      slots_.push_back(std::move(slot));
    }
    if (cfg.network.compute_time == "flops") {
      modelled_rate_ = device_peak_flops(cfg.network) * cfg.network.mfu;
      // The observer's figure (counted once per process for a TorchScript
      // module), per token times a step's tokens, as the start event reports it.
      const double tokens = double(cfg.train.batch_size * slots_[0].model->tokens_per_example());
      // With Muon, its Newton-Schulz products too (inner_step_flops).
      std::vector<std::string> names;
      for (const auto& item : slots_[0].model->named_parameters()) names.push_back(item.key());
      const double optimizer = inner_step_flops(cfg.optim, slots_[0].params, names);
      modelled_step_ = (observer_.model_flops().per_token * tokens + optimizer) / modelled_rate_;
    }
    trajectory_ = trajectory_config(cfg);
    if (resuming() && cluster.is_leader()) {
      const CheckpointRecords records = store_.read(plan.resume_step, "driver");
      StateReader reader(records, store_.file(plan.resume_step, "driver").string());
      visit_meta(reader, plan.resume_step, -1);
      observer_.visit_state(reader);
      reader.expect_all_read();
    }
  }

  RunSummary run() {
    tune_allocator();
    if (cfg_.train.gemm == "auto") choose_gemm_routes();
    observer_.start();
    if (cluster_.is_leader()) {
      observer_.announce_start();
      if (!resuming()) observer_.write_start_event(threads_);
    }
    if (slots_.size() == 1) {
      guarded_worker(slots_[0]);  // a real rank: its worker runs on this thread
    } else {
      std::vector<std::thread> threads;
      for (auto& slot : slots_) threads.emplace_back([this, &slot] { guarded_worker(slot); });
      for (auto& t : threads) t.join();
    }
    if (first_error_) std::rethrow_exception(first_error_);
    if (stopped_at_ < 0 && !plan_.run_dir.empty()) {
      for (const auto& slot : slots_) write_timing_trace(plan_.run_dir, slot.rank, slot.trace);
      if (cluster_.is_leader()) write_final_model();
    }
    RunSummary summary = observer_.summary();
    summary.stopped_at = stopped_at_;
    summary.stopped_by_signal = stopped_at_ >= 0 && stop_requested();
    if (stopped_at_ >= 0 && !plan_.run_dir.empty())
      summary.checkpoint = store_.file(stopped_at_, "driver").parent_path().string();
    return summary;
  }

 private:
  // <run>/model.safetensors: what the final evaluation judged, for
  // `atoll export` and `atoll sample` (model/export.h has the names).
  void write_final_model() {
    write_safetensors((plan_.run_dir / kRunModelFile).string(), observer_.final_weights(),
                      {{"format", "pt"},
                       {"atoll.model.kind", cfg_.model.kind},
                       {"atoll.eval_model", observer_.final_eval_model()},
                       {"atoll.steps", std::to_string(cfg_.train.steps)},
                       {"atoll.final_val_loss", format_number("%.17g", observer_.summary().final_val_loss)}});
  }

  // train.gemm = auto: each fp32 product shape of a step to the GEMM
  // measured faster at it, before any worker runs. A resumed run takes the
  // routes it started with from its checkpoint (each process its own: real
  // ranks measure for themselves), so that it multiplies as it did.
  void choose_gemm_routes() {
    if (resuming()) {
      const std::string part = worker_part(slots_[0].rank);
      const std::string file = store_.file(plan_.resume_step, part).string();
      const CheckpointRecords records = store_.read(plan_.resume_step, part);
      StateReader reader(records, file);
      std::string text;
      reader.text(kGemmRoutesRecord, text);
      try {
        set_gemm_routes(routes_from_text(text, file));
      } catch (const std::runtime_error& e) {
        throw CheckpointError(e.what());
      }
      return;
    }
    // Only the built-in GPT routes its products, and only fp32 ones (a
    // TorchScript module's run in ATen, and a dry step could move its
    // buffers; bf16 products are oneDNN's already).
    if (cfg_.model.kind != "gpt" || cfg_.train.precision != "fp32") return set_gemm_routes({});
    WorkerSlot& slot = slots_[0];
    const auto stream = data_.stream(0, layout_.islands, static_cast<uint64_t>(cfg_.run.seed));
    const auto batch = stream->next(cfg_.train.batch_size);
    const int64_t micro = micro_batches(cfg_.model, cfg_.train.batch_size, threads_);
    set_gemm_routes(measure_gemm_routes(*slot.model, slot.params, batch, cfg_.train.precision, micro, threads_));
  }

  // Each worker's checkpoint holds its process's routes (train.gemm = auto);
  // resuming, they must be what choose_gemm_routes() set.
  void visit_gemm_routes(StateVisitor& v, const std::string& source) {
    if (cfg_.train.gemm != "auto") return;
    const std::string now = routes_to_text(gemm_routes());
    std::string text = now;
    v.text(kGemmRoutesRecord, text);
    if (v.loading() && text != now)
      throw CheckpointError(source + ": its GEMM routes are not those of this process's first worker (" +
                            worker_part(slots_[0].rank) + "): the checkpoint is corrupted");
  }

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
    set_compute_threads(threads_, products_in_onednn(cfg_.train.precision));
    const int64_t w = slot.rank;
    Communicator& comm = *slot.comm;
    // Island i's devices read island i's shard (one stream, D batches at a
    // time, each device its own slice): an island of D devices of batch B
    // sees what one device of batch D x B would.
    const int64_t island = w / layout_.devices, device = w % layout_.devices;
    auto stream = data_.stream(island, layout_.islands,
                               mix_seed(static_cast<uint64_t>(cfg_.run.seed), uint64_t(island) + 1, 0xda7a));
    std::unique_ptr<GradientAverager> island_grads;
    networks_.attach(w, comm, slot.island_comm, slot.clock);
    if (slot.island_comm != nullptr) {
      stream = DataSource::device_stream(std::move(stream), device, layout_.devices);
      island_grads = std::make_unique<GradientAverager>(cfg_, slot.params, "fp32");
      slot.island_grads = island_grads.get();
    }
    comm.attach_trace(&slot.trace, 0);
    if (slot.island_comm != nullptr) slot.island_comm->attach_trace(&slot.trace, 1);
    std::vector<std::string> names;
    for (const auto& item : slot.model->named_parameters()) names.push_back(item.key());
    auto strategy = make_strategy(strategy_cfg_, slot.params, comm, names);
    DivergenceCheck divergence(cfg_, names, w, cluster_.real(), strategy->shared_global());
    slot.global = strategy->global_params();
    slot.strategy = strategy.get();
    slot.stream = stream.get();
    const int64_t first_step = resuming() ? plan_.resume_step : 0;
    if (resuming()) load_worker(slot);
    slot.model->train();
    const bool flops_mode = cfg_.network.compute_time == "flops";
    const int64_t micro = micro_batches(cfg_.model, cfg_.train.batch_size, threads_);
    // With one thread per worker the thread's CPU time is its compute time,
    // unaffected by other workers sharing the cores or by waiting in a
    // collective; with more threads only wall time covers the helpers' work.
    const Clock::time_point start = Clock::now();
    auto now = [&] { return threads_ == 1 ? thread_cpu_seconds() : seconds_since(start); };
    // Wall time of compute, net of the communication inside a strategy step.
    auto wall_compute = [&](Clock::time_point from, double comm_before) {
      return seconds_since(from) - (cluster_.measured_comm_seconds(w) - comm_before);
    };

    if (!resuming()) observe_at(0, *strategy);
    for (int64_t t = first_step; t < cfg_.train.steps; ++t) {
      if (t == first_step) observer_.first_step_started();
      slot.trace.step();
      comm.set_step(t);
      if (slot.island_comm != nullptr) slot.island_comm->set_step(t);
      const Clock::time_point wall0 = Clock::now();
      const double comm0 = cluster_.measured_comm_seconds(w);
      if (!strategy->needs_gradient(t)) {
        // No batch drawn, no compute charged: only the strategy's own update.
        strategy->step(t, learning_rate(cfg_.optim, t, cfg_.train.steps));
        after_update(divergence, comm, *strategy, t);
        charge_extra(slot, *strategy, t, flops_mode);
        slot.compute_wall += wall_compute(wall0, comm0);
        if (observe_at(t + 1, *strategy)) break;
        continue;
      }
      double t0 = 0, t1 = 0;
      at::Tensor loss;
      {
        ComputeSlots::Hold hold(compute_slots_);
        t0 = now();
        const Batch batch = stream->next(cfg_.train.batch_size);
        loss = forward_backward(*slot.model, slot.params, batch, cfg_.train.precision, micro);
        t1 = now();
      }
      const double speed = speed_at(slot, t);
      slot.charge_compute(speed * (flops_mode ? modelled_step_ : t1 - t0));
      // Data parallel inside the island: the devices' mean gradient, over
      // the island's links, before the method's step between islands.
      if (island_grads) island_grads->average(slot.params, *slot.island_comm);
      strategy->step(t, learning_rate(cfg_.optim, t, cfg_.train.steps));
      after_update(divergence, comm, *strategy, t);
      if (flops_mode) {
        charge_extra(slot, *strategy, t, flops_mode);
      } else {
        strategy->take_extra_flops();  // measured: the wall time below covers it
        slot.charge_compute(speed * std::max(0.0, now() - t1));
      }
      slot.compute_wall += wall_compute(wall0, comm0);
      const double l = loss.item<double>();
      if (!std::isfinite(l))
        throw std::runtime_error("worker " + std::to_string(w) + ": loss is " + std::to_string(l) + " at step " +
                                 std::to_string(t + 1) + "; lower optim.lr");
      slot.loss_sum += l;
      slot.loss_count += 1;
      if (observe_at(t + 1, *strategy)) break;
    }
    slot.strategy = nullptr;  // the objects die with this frame
    slot.stream = nullptr;
    slot.island_grads = nullptr;
  }

  // The divergence check (and its test fault) after the update of step t:
  // compares theta_g when step t ended with a sync.
  static void after_update(DivergenceCheck& check, Communicator& comm, Strategy& strategy, int64_t t) {
    const bool synced = t >= strategy.local_start_step() && strategy.next_sync_step(t) == t;
    check.after_update(comm, strategy.global_params(), synced, t);
  }

  // The modelled clock charges the method's own work of step t (its FLOPs
  // at the device's rate, times the worker's speed factor).
  void charge_extra(WorkerSlot& slot, Strategy& strategy, int64_t t, bool flops_mode) {
    const double flops = strategy.take_extra_flops();
    if (flops_mode && flops > 0) slot.charge_compute(speed_at(slot, t, false) * flops / modelled_rate_);
  }

  // Worker w's compute-time factor at step t: network.speed_factors, then
  // the faults.speed_schedule changes up to t (each logged when it happens).
  double speed_at(WorkerSlot& slot, int64_t t, bool log_change = true) {
    double factor = speed_[slot.rank];
    for (const auto& change : speed_changes_) {
      if (change.step > t) break;
      if (change.worker != slot.rank) continue;
      factor = change.factor;
      if (change.step == t && log_change)
        slot.events.push_back(fault_event_line(t, slot.rank, "speed", "compute-time factor " + std::to_string(factor)));
    }
    return factor;
  }

  // Parks this worker at an observation step (log, eval or checkpoint);
  // the last local worker to arrive runs the observation. Returns true when
  // the run stops here (a signal, or run.stop_at): every worker of every
  // process gets the same answer, after the checkpoint is written.
  // `method` is this worker's strategy: when it syncs decides when agreement
  // is measured, and every worker's gives the same answer.
  bool observe_at(int64_t step, const Strategy& method) {
    const bool eval = schedule_.is_eval_step(step), log = schedule_.is_log_step(step, method),
               checkpoint = schedule_.is_checkpoint_step(step);
    if (!eval && !log && !checkpoint) return false;
    const bool agreement = log && schedule_.is_correlation_step(step, method);
    const bool origin = log && schedule_.is_agreement_origin_step(step, method);
    cluster_.meet([&] {
      for (auto& s : slots_)  // the strategies' events since the last meeting
        for (const auto& e : s.strategy->take_events())
          s.events.push_back(fault_event_line(e.step, s.rank, e.kind, e.detail));
      if (eval || log) observe(step, log, eval, agreement, origin);
      // Every process takes part in the same observer collectives.
      const bool stop = step < cfg_.train.steps && cluster_.any(schedule_.is_stop_step(step) || stop_requested());
      if (checkpoint || stop) write_checkpoint(step);
      if (stop) stopped_at_ = step;
      cluster_.observed();
    });
    return stopped_at_ >= 0;
  }

  // Runs once per process while its local workers are parked. Every process
  // takes part in the cluster's collectives; only the leader observes.
  void observe(int64_t step, bool log, bool eval, bool agreement, bool origin) {
    Observation o;
    o.step = step;
    o.log = log;
    o.eval = eval;
    o.agreement = agreement;
    o.agreement_origin = origin;
    std::vector<WorkerReport> local;
    for (auto& s : slots_) {
      local.push_back(s.report(cluster_.measured_comm_seconds(s.rank), cfg_.run.peak_window_steps));
      s.clear_window();
    }
    o.reports = cluster_.reports(local);
    o.global = slots_[0].global;
    if (observer_.needs_params(o)) {
      std::vector<std::vector<at::Tensor>> mine;
      for (const auto& s : slots_) mine.push_back(s.params);
      o.params = cluster_.params(mine);
      // An island's devices hold the same parameters: the method's workers
      // (whose agreement and average the observer measures) are the islands.
      if (layout_.devices > 1) {
        std::vector<std::vector<at::Tensor>> leaders;
        for (size_t r = 0; r < o.params.size(); r += size_t(layout_.devices)) leaders.push_back(o.params[r]);
        o.params = std::move(leaders);
      }
    }
    if (!cluster_.is_leader()) return;
    if (log && slots_[0].strategy) o.strategy_stats = slots_[0].strategy->stats();  // train events carry them
    observer_.observe(o);
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
      throw CheckpointError("the checkpoint of step " + std::to_string(step) +
                            " was written with other settings: " + trajectory_difference(config, trajectory_) +
                            "; resume with the settings it was written with, or start a new run");
    if (saved_step != step || saved_rank != rank)
      throw CheckpointError("checkpoint file of step " + std::to_string(saved_step) + ", worker " +
                            std::to_string(saved_rank) + " is filed as step " + std::to_string(step) +
                            (rank >= 0 ? ", worker " + std::to_string(rank) : std::string()));
  }

  void load_worker(WorkerSlot& slot) {
    const std::string part = worker_part(slot.rank);
    const CheckpointRecords records = store_.read(plan_.resume_step, part);
    StateReader reader(records, store_.file(plan_.resume_step, part).string());
    visit_meta(reader, plan_.resume_step, slot.rank);
    slot.visit_state(reader);
    visit_gemm_routes(reader, store_.file(plan_.resume_step, part).string());
    reader.expect_all_read();
    // Its repeat counts are run lengths, not bytes the file holds: the
    // checkpoint's step is what backs them (retime then replays every step).
    if (slot.trace.steps() != plan_.resume_step)
      throw CheckpointError(store_.file(plan_.resume_step, part).string() + ": its timing trace holds " +
                            std::to_string(slot.trace.steps()) + " steps, but the checkpoint is of step " +
                            std::to_string(plan_.resume_step) + ": the file is corrupted");
  }

  // Runs in the observation while every local worker is parked.
  void write_checkpoint(int64_t step) {
    if (plan_.run_dir.empty()) return;  // simulate(): no run folder
    for (auto& slot : slots_) {
      StateWriter writer;
      visit_meta(writer, step, slot.rank);
      slot.visit_state(writer);
      visit_gemm_routes(writer, "");
      store_.write(step, worker_part(slot.rank), writer.records());
    }
    if (cluster_.is_leader()) {
      StateWriter writer;
      visit_meta(writer, step, -1);
      observer_.visit_state(writer);
      store_.write(step, "driver", writer.records());
    }
    // Only once every process has its files does an older checkpoint go.
    cluster_.any(false);
    if (cluster_.is_leader()) store_.prune(cfg_.run.keep_checkpoints);
  }

  Config cfg_;
  Schedule schedule_;
  CheckpointPlan plan_;
  CheckpointStore store_;
  std::string trajectory_;  // trajectory_config(cfg_): checkpoints must match it
  Cluster& cluster_;
  int64_t workers_;
  DataSource data_;
  WorkerNetworks networks_;
  IslandLayout layout_;
  Config strategy_cfg_;  // cfg_ with strategy.workers = the islands
  Observer observer_;
  int64_t threads_ = 1;
  ComputeSlots compute_slots_;
  std::vector<WorkerSlot> slots_;
  double modelled_rate_ = 0;  // flops mode: device FLOP/s x MFU
  double modelled_step_ = 0;  // flops mode: seconds of one step's forward and backward
  std::vector<double> speed_;
  std::vector<SpeedChange> speed_changes_;
  int64_t stopped_at_ = -1;  // set by the observation when the run stops early
  std::mutex error_mutex_;
  std::exception_ptr first_error_;
};

}  // namespace

RunSummary run_on_cluster(const Config& cfg, Cluster& cluster, MetricsLog& log, const TrainHooks& hooks,
                          int64_t threads_per_worker_hint, const CheckpointPlan& plan) {
  // train.precision = auto becomes this machine's choice before anything reads it.
  Config resolved = cfg;
  resolved.train.precision = resolve_precision(cfg.train.precision);
  set_gemm(resolved.train.gemm);  // process-wide: every model of this run multiplies in it
  Driver driver(resolved, cluster, log, hooks, threads_per_worker_hint, plan);
  return driver.run();
}

}  // namespace atl
