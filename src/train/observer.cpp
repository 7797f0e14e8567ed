#include "train/observer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "model/export.h"
#include "model/gemm.h"
#include "net/devices.h"
#include "train/correlation.h"
#include "train/task.h"
#include "train/threads.h"
#include "util/format.h"
#include "util/json_input.h"
#include "util/machine.h"
#include "util/process_clock.h"
#include "util/wall_time.h"

namespace atl {
namespace {

using Clock = WallClock;

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

// JSON for a figure that may be undefined (NaN): null, never a NaN.
nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

}  // namespace

std::string fault_event_line(int64_t step, int64_t worker, const std::string& kind, const std::string& detail) {
  return nlohmann::json{{"event", "fault"}, {"step", step}, {"worker", worker}, {"kind", kind}, {"detail", detail}}
      .dump();
}

Observer::Observer(const Config& cfg, MetricsLog& log, const TrainHooks& hooks, const DataSource& data,
                   const NetworkModel& net, bool real_run)
    : cfg_(cfg),
      log_(log),
      hooks_(hooks),
      data_(data),
      net_(net),
      real_(real_run),
      workers_(cfg.strategy.workers),
      islands_(island_layout(cfg).devices > 1),
      eval_model_(
          make_model(cfg.model, data.vocab_size(), static_cast<uint64_t>(cfg.run.seed), data.tokens_per_example())) {
  params_ = eval_model_->num_params();
  for (const auto& p : eval_model_->parameters()) initial_params_.push_back(p.detach().clone());
  tokens_per_step_ = cfg.train.batch_size * eval_model_->tokens_per_example();
  // Counted (a TorchScript module without model.flops_per_sample) on the
  // first evaluation batch, which has the shape of the run's examples; on
  // this model, not a worker's, so no worker's state can change.
  const Batch example = data.eval_batches().empty() ? Batch{} : data.eval_batches().front();
  flops_ = model_training_flops(cfg.model, *eval_model_, example.first, example.second);
  flops_per_token_ = flops_.per_token;
  if (cfg.network.compute_time == "flops" && !(flops_.per_example > 0))
    throw std::invalid_argument(
        "model.path '" + cfg.model.path + "': one forward pass ran no matrix product, convolution or attention " +
        "that atoll counts, so network.compute_time = 'flops' would charge no compute: set " +
        "model.flops_per_sample (training FLOPs of one example), or network.compute_time = 'measured'");
  task_ = model_task(cfg, data);
}

void Observer::start() { start_ = Clock::now(); }

void Observer::first_step_started() {
  std::call_once(first_step_, [this] { startup_s_ = seconds_since_process_start(); });
}

double Observer::seconds_since_start() const { return seconds_since(start_); }

bool Observer::needs_params(const Observation& o) const {
  const std::string which = eval_model_kind(o.global != nullptr);
  const bool last = o.step == cfg_.train.steps;  // the end event fingerprints every worker
  return last || o.agreement || o.agreement_origin || (o.eval && (which != "global" || cfg_.strategy.eval_worker0));
}

void Observer::visit_state(StateVisitor& v) {
  StateVisitor::Scope scope(v, "observer");
  double elapsed = elapsed_offset_ + (v.loading() ? 0.0 : seconds_since_start());
  v.real("elapsed", elapsed);
  if (v.loading()) elapsed_offset_ = elapsed;
  v.real("eval_wall", eval_wall_);
  v.real("logged_sent", logged_sent_);
  v.integer("logged_step", logged_step_);
  v.real("last_train_loss", last_train_loss_);
  v.real("last_val_loss", last_val_loss_);
  v.real("last_correlation", last_correlation_);
  v.real("last_update_correlation", last_agreement_.update_correlation);
  v.real("last_update_correlation_min", last_agreement_.update_correlation_min);
  v.real("last_disagreement", last_agreement_.disagreement);
  v.integer("outages_logged", outages_logged_);
  v.tensors("agreement_origin", origin_params_);
  // The sizes saved here must be on disk before the checkpoint that names
  // them (driver.ckpt is written after this walk): resume refuses shorter files.
  if (!v.loading()) log_.sync();
  int64_t jsonl = static_cast<int64_t>(log_.jsonl_bytes()), csv = static_cast<int64_t>(log_.csv_bytes());
  v.integer("metrics.jsonl_bytes", jsonl);  // read by the run folder before the log reopens
  v.integer("metrics.csv_bytes", csv);
}

void Observer::observe(const Observation& o) {
  const int64_t step = o.step;
  const double elapsed = elapsed_offset_ + seconds_since_start();
  const double train_wall = std::max(1e-9, elapsed - eval_wall_);
  const std::string which = eval_model_kind(o.global != nullptr);
  const bool correlation = o.log && o.agreement;
  const bool last = step == cfg_.train.steps;

  double loss = 0, sim_time = 0, compute = 0, blocked = 0, sent = 0, received = 0, intra_sent = 0;
  for (const auto& r : o.reports) {
    intra_sent += r.intra_sent;
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
  // Islands: the bytes above crossed the wide-area links; these stayed inside.
  if (islands_) common["intra_bytes_sent_per_worker"] = intra_sent / n;
  for (const auto& r : o.reports)  // rank order
    for (const auto& e : r.events) log_.write(parse_json_input(e, "a worker's event"));
  log_outages(step, sim_time);
  ProgressInfo info;
  info.step = step;
  info.total_steps = cfg_.train.steps;
  info.elapsed_s = elapsed;
  info.tokens_per_s = step > 0 ? tokens_per_s : 0;
  info.in_tokens = task_ == "language";
  info.examples_per_s = info.tokens_per_s / double(std::max<int64_t>(1, eval_model_->tokens_per_example()));
  info.sim_time_s = sim_time;
  info.bytes_sent_per_worker = sent / n;
  info.eta_s = step > 0 ? train_wall / double(step) * double(cfg_.train.steps - step) : 0;
  if (o.log) {
    nlohmann::json e = common;
    e["event"] = "train";
    e["loss"] = loss;
    e["lr"] = learning_rate(cfg_.optim, step - 1, cfg_.train.steps);
    e["tokens_per_s"] = tokens_per_s;
    e["model_flops_per_s"] = tokens_per_s * flops_per_token_;
    // Per-worker bytes per step over this log window (the cumulative figure is in `common`).
    e["bytes_sent_per_worker_per_step"] = (sent / n - logged_sent_) / double(std::max<int64_t>(1, step - logged_step_));
    logged_sent_ = sent / n;
    logged_step_ = step;
    for (const auto& [key, value] : o.strategy_stats) e[key] = value;
    if (o.agreement_origin) {
      // The workers hold one model at the end of a DDP warm-up; what they
      // did apart is measured from it.
      origin_params_.clear();
      for (const auto& p : o.params[0]) origin_params_.push_back(p.detach().clone());
    }
    if (correlation) {
      const auto corr_start = Clock::now();
      const Correlation c = parameter_correlation(o.params);
      const Agreement a = worker_agreement(o.params, origin_params_.empty() ? initial_params_ : origin_params_);
      e["correlation"] = c.mean;
      e["correlation_min"] = c.min;
      e["update_correlation"] = number_or_null(a.update_correlation);
      e["update_correlation_min"] = number_or_null(a.update_correlation_min);
      e["disagreement"] = number_or_null(a.disagreement);
      e["correlation_ms"] = 1e3 * seconds_since(corr_start);  // all three measures
      last_correlation_ = c.mean;
      last_agreement_ = a;
      eval_wall_ += seconds_since(corr_start);  // like eval: not training time
    }
    log_.write(e);
    last_train_loss_ = loss;
    info.loss = loss;
  }
  if (o.eval) {
    const auto eval_start = Clock::now();
    // The last evaluation is the one the run is judged by: over the whole
    // validation split unless train.final_eval = "sample".
    const bool full = last && cfg_.train.final_eval == "full";
    nlohmann::json e = common;
    e["event"] = "eval";
    e["eval_model"] = which;
    const EvalResult r = evaluate(which, o, full);
    if (last) {  // before the worker-0 evaluation below replaces the weights
      final_weights_ = exported_tensors(*eval_model_, cfg_.model);
      final_eval_model_ = which;
    }
    e["val_loss"] = r.loss;
    e["val_loss_se"] = number_or_null(r.se);
    e["val_loss_se_unit"] = r.se_unit;  // "document": clustered by the split's documents
    e["val_loss_se_clusters"] = r.se_clusters;
    // A perplexity is a language model's figure; a classifier has its accuracy.
    if (task_ == "language") e["val_ppl"] = std::exp(r.loss);
    if (task_ == "classification") e["val_accuracy"] = number_or_null(r.accuracy);
    e["eval_split"] = full ? "full" : "sample";
    e["eval_examples"] = r.examples;
    e["eval_tokens"] = r.tokens;
    if (cfg_.strategy.eval_worker0 && which != "worker0") {
      const EvalResult w0 = evaluate("worker0", o, full);
      e["val_loss_worker0"] = w0.loss;
      e["val_loss_worker0_se"] = number_or_null(w0.se);
    }
    const double wall = seconds_since(eval_start);
    e["eval_s"] = wall;
    eval_wall_ += wall;
    if (last) {
      final_eval_ = r;
      final_eval_wall_ = wall;
    }
    log_.write(e);
    last_val_loss_ = r.loss;
    info.val_loss_se = r.se;
    info.is_eval = true;
  }
  info.loss = last_train_loss_;
  info.val_loss = last_val_loss_;
  if (workers_ > 1 && cfg_.strategy.correlation_every > 0 && step >= cfg_.strategy.correlation_every) {
    info.correlation = last_correlation_;
    info.update_correlation = last_agreement_.update_correlation;
    info.disagreement = last_agreement_.disagreement;
  }
  if (hooks_.progress) hooks_.progress(info);
  if (last) finish(o, loss, sim_time, compute / n, sent / n, tokens_per_s);
}

std::string outage_event_line(int64_t step, const Outage& out) {
  return fault_event_line(
      step, out.worker, "outage",
      "link down from " + format_number("%g", out.from) + " s to " + format_number("%g", out.to) + " s (simulated)");
}

// A "fault" event for each link outage the simulated clock has reached.
void Observer::log_outages(int64_t step, double sim_time) {
  const auto& outages = net_.outages();
  for (; outages_logged_ < int64_t(outages.size()); ++outages_logged_) {
    const Outage& out = outages[size_t(outages_logged_)];
    if (out.from > sim_time) break;
    log_.write(nlohmann::json::parse(outage_event_line(step, out)));
  }
}

std::string Observer::eval_model_kind(bool has_global) const {
  const std::string& k = cfg_.strategy.eval_model;
  if (k != "auto") return k;
  return has_global ? "global" : "average";
}

void Observer::load_eval_params(const std::string& which, const Observation& o) {
  at::NoGradGuard no_grad;
  auto dst = eval_model_->parameters();
  if (which == "global") {
    if (!o.global)
      throw std::invalid_argument("strategy.eval_model = 'global': " + cfg_.strategy.name + " keeps no global model");
    for (size_t k = 0; k < dst.size(); ++k) dst[k].copy_((*o.global)[k]);
  } else if (which == "worker0") {
    for (size_t k = 0; k < dst.size(); ++k) dst[k].copy_(o.params[0][k]);
  } else {
    // Sum in rank order, so the average is bitwise reproducible.
    for (size_t k = 0; k < dst.size(); ++k) {
      at::Tensor acc = o.params[0][k].detach().clone();
      // The method's workers: every worker, or each island's first device.
      const int64_t models = static_cast<int64_t>(o.params.size());
      for (int64_t w = 1; w < models; ++w) acc.add_(o.params[w][k].detach());
      dst[k].copy_(acc.div_(double(models)));
    }
  }
}

EvalResult Observer::evaluate(const std::string& which, const Observation& o, bool full) {
  load_eval_params(which, o);
  // Large batches for the full evaluation: no activations are kept for a
  // backward pass, so a batch costs only its forward pass's memory.
  std::vector<Batch> batches;
  std::vector<int64_t> documents;  // each example's, for the standard error
  if (full) {
    const int64_t total = data_.full_eval_examples(), batch = cfg_.train.eval_batch_size;
    for (int64_t first = 0; first < total; first += batch)
      batches.push_back(data_.full_eval_batch(first, std::min(batch, total - first)));
    documents = data_.full_eval_documents();
  } else {
    batches = data_.eval_batches();
    documents = data_.eval_documents();
  }
  return evaluate_batches_parallel(eval_models(batches.size()), batches, nullptr, documents);
}

// The evaluated model and, while the workers are parked, one replica of it
// per further core, holding the same parameters.
std::vector<Model*> Observer::eval_models(size_t batches) {
  const size_t wanted = std::min<size_t>(batches, size_t(std::max<int64_t>(1, available_cores())));
  while (1 + eval_replicas_.size() < wanted)
    eval_replicas_.push_back(
        make_model(cfg_.model, data_.vocab_size(), static_cast<uint64_t>(cfg_.run.seed), data_.tokens_per_example()));
  std::vector<Model*> models = {eval_model_.get()};
  at::NoGradGuard no_grad;
  const auto src = eval_model_->parameters();
  for (size_t r = 0; r + 1 < wanted; ++r) {
    auto dst = eval_replicas_[r]->parameters();
    for (size_t k = 0; k < dst.size(); ++k) dst[k].copy_(src[k]);
    models.push_back(eval_replicas_[r].get());
  }
  return models;
}

void Observer::write_start_event(int64_t threads_per_worker) {
  nlohmann::json e = {{"event", "start"},
                      {"strategy", cfg_.strategy.name},
                      {"workers", workers_},
                      {"params", params_},
                      {"flops_per_token", flops_per_token_},
                      {"flops_per_example", flops_.per_example},
                      {"flops_source", flops_.source},
                      {"tokens_per_step_per_worker", tokens_per_step_},
                      {"global_batch_tokens", tokens_per_step_ * workers_},
                      {"task", task_},
                      {"global_batch_examples", cfg_.train.batch_size * workers_},
                      {"token_budget_per_worker", tokens_per_step_ * cfg_.train.steps},
                      {"token_budget_total", tokens_per_step_ * cfg_.train.steps * workers_},
                      {"train_split_size", data_.train_tokens()},
                      {"vocab_size", data_.vocab_size()},
                      {"threads_per_worker", threads_per_worker},
                      {"precision", cfg_.train.precision},
                      {"gemm", cfg_.train.gemm},
                      {"compute_time", cfg_.network.compute_time},
                      {"clock", describe_compute_clock(cfg_.network, flops_per_token_ * double(tokens_per_step_))},
                      {"mode", real_ ? "real" : "simulated"}};
  // The machine, so that a figure or a failure can be tied to it.
  const MachineInfo m = machine_info();
  e["machine"] = {{"cpu", m.cpu},
                  {"vendor", m.vendor},
                  {"cpu_family", m.family},
                  {"cpu_model", m.model},
                  {"isa", m.isa},
                  {"blas_kernels", m.blas_kernels},
                  {"openblas_coretype", m.blas_coretype}};
  // train.gemm = auto: each product shape, its library and both timings.
  if (cfg_.train.gemm == "auto") {
    e["gemm_routes"] = nlohmann::json::array();
    for (const GemmRoute& r : gemm_routes())
      e["gemm_routes"].push_back({{"shape", describe(r.shape)},
                                  {"gemm", gemm_name(r.gemm)},
                                  {"openblas_ms", 1e3 * r.openblas_seconds},
                                  {"onednn_ms", 1e3 * r.onednn_seconds}});
  }
  if (islands_) {
    const IslandLayout l = island_layout(cfg_);
    e["islands"] = l.islands;
    e["devices_per_island"] = l.devices;
    e["exchange"] = cfg_.islands.exchange;
  }
  log_.write(e);
}

void Observer::announce_start() const {
  if (!hooks_.start) return;
  StartInfo s;
  s.params = params_;
  s.flops_per_example = flops_.per_example;
  s.flops_source = flops_.source;
  // The precision trained in (train.precision = auto resolved for this machine).
  std::string products;
  if (cfg_.train.gemm == "onednn") products = " (fp32 products in oneDNN)";
  if (cfg_.train.gemm == "auto") products = " (" + describe_routes(gemm_routes()) + ")";
  s.summary = "model: " + std::to_string(params_) + " parameters, " + describe_model_flops(flops_) + "; training in " +
              cfg_.train.precision + products;
  hooks_.start(s);
}

void Observer::finish(const Observation& o, double loss, double sim_time, double compute, double sent,
                      double tokens_per_s) {
  summary_.steps = cfg_.train.steps;
  summary_.workers = workers_;
  summary_.params = params_;
  summary_.final_train_loss = loss;
  summary_.final_val_loss = last_val_loss_;
  summary_.final_val_loss_se = final_eval_.se;
  summary_.final_val_loss_se_unit = final_eval_.se_unit;
  summary_.final_val_loss_se_clusters = final_eval_.se_clusters;
  summary_.task = task_;
  if (task_ == "classification") summary_.final_val_accuracy = final_eval_.accuracy;
  summary_.global_batch_examples = cfg_.train.batch_size * workers_;
  summary_.global_batch_tokens = tokens_per_step_ * workers_;
  summary_.final_eval_examples = final_eval_.examples;
  summary_.final_eval_tokens = final_eval_.tokens;
  summary_.final_eval = cfg_.train.final_eval;
  summary_.eval_wall_seconds = eval_wall_;
  summary_.final_eval_wall_seconds = final_eval_wall_;
  if (workers_ > 1 && cfg_.strategy.correlation_every > 0) {
    summary_.final_update_correlation = last_agreement_.update_correlation;
    summary_.final_disagreement = last_agreement_.disagreement;
  }
  summary_.wall_seconds = seconds_since_start();
  summary_.tokens_per_s = tokens_per_s;
  summary_.examples_per_s = tokens_per_s / double(std::max<int64_t>(1, eval_model_->tokens_per_example()));
  summary_.model_flops_per_s = tokens_per_s * flops_per_token_;
  summary_.sim_seconds = sim_time;
  summary_.compute_utilisation = sim_time > 0 ? compute / sim_time : 1.0;
  summary_.bytes_sent_per_worker = sent;
  nlohmann::json by_tag = nlohmann::json::object(), per_worker = nlohmann::json::array();
  nlohmann::json received_by_tag = nlohmann::json::object();
  double comm_wall = 0, compute_wall = 0, network_model = 0, intra_sent = 0, intra_network = 0;
  double sent_values = 0, sent_indices = 0, sent_scales = 0, peak_sent = 0, compute_total = 0;
  for (const auto& r : o.reports) {
    for (const auto& [tag, bytes] : r.received_by_tag) received_by_tag[tag] = received_by_tag.value(tag, 0.0) + bytes;
    sent_values += r.sent_values;
    sent_indices += r.sent_indices;
    sent_scales += r.sent_scales;
    peak_sent = std::max(peak_sent, r.peak_sent);
    compute_total += r.compute_s;
    intra_sent += r.intra_sent;
    intra_network += r.intra_network_s;
    nlohmann::json w = {
        {"sent", r.sent}, {"received", r.received}, {"ops", r.ops}, {"network_model_s", r.network_model_s}};
    if (islands_) {
      w["intra_sent"] = r.intra_sent;
      w["intra_received"] = r.intra_received;
      w["intra_network_model_s"] = r.intra_network_s;
    }
    if (real_) {
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
  nlohmann::json e = {
      {"event", "end"},
      {"final_val_loss", last_val_loss_},
      {"final_train_loss", loss},
      {"wall_s", summary_.wall_seconds},
      {"tokens_per_s", tokens_per_s},
      {"model_flops_per_s", summary_.model_flops_per_s},
      {"sim_time_s", sim_time},
      {"compute_utilisation", summary_.compute_utilisation},
      {"bytes_sent_per_worker", sent},
      {"network_model_s_per_worker", network_model / n},
      {"final_correlation", workers_ > 1 && cfg_.strategy.correlation_every > 0 ? nlohmann::json(last_correlation_)
                                                                                : nlohmann::json(nullptr)},
      {"final_update_correlation", number_or_null(summary_.final_update_correlation)},
      {"final_disagreement", number_or_null(summary_.final_disagreement)},
      {"final_val_loss_se", number_or_null(summary_.final_val_loss_se)},
      {"final_val_loss_se_unit", summary_.final_val_loss_se_unit},
      {"final_val_loss_se_clusters", summary_.final_val_loss_se_clusters},
      {"final_eval", summary_.final_eval},
      {"final_eval_examples", summary_.final_eval_examples},
      {"final_eval_tokens", summary_.final_eval_tokens},
      {"final_eval_s", summary_.final_eval_wall_seconds},
      {"eval_s", summary_.eval_wall_seconds},
      {"startup_s", number_or_null(startup_s_)},
      {"bytes_sent_by_tag_total", by_tag},
      {"bytes_received_by_tag_total", received_by_tag},
      {"bytes_sent_by_part_per_worker",
       {{"values", sent_values / n}, {"indices", sent_indices / n}, {"scales", sent_scales / n}}},
      {"part_shares_by_tag",
       o.reports.empty() ? nlohmann::json::object() : nlohmann::json(o.reports.front().part_shares_by_tag)},
      {"peak_window_steps", cfg_.run.peak_window_steps},
      {"peak_sent_bytes_per_worker", peak_sent},
      {"peak_bandwidth_per_worker",
       peak_bandwidth(peak_sent, double(cfg_.run.peak_window_steps), compute_total / n, double(cfg_.train.steps))},
      {"ledger_per_worker", per_worker}};
  if (task_ == "classification") e["final_val_accuracy"] = number_or_null(summary_.final_val_accuracy);
  // Bitwise fingerprints of every worker's final parameters: equal runs
  // (simulated against real, resumed against uninterrupted) have equal hashes.
  nlohmann::json hashes = nlohmann::json::array();
  for (const auto& worker : o.params) hashes.push_back(parameter_hash(worker));
  e["params_hash_per_worker"] = hashes;
  summary_.network_model_seconds = network_model / n;
  if (islands_) {
    // Link classes: the wide-area figures are the ones without "intra".
    e["intra_bytes_sent_per_worker"] = intra_sent / n;
    e["intra_network_model_s_per_worker"] = intra_network / n;
    summary_.intra_bytes_sent_per_worker = intra_sent / n;
  }
  if (real_) {
    summary_.comm_wall_seconds = comm_wall / n;
    // Measured next to the ledger's bytes and the network model's prediction.
    e["comm_wall_s_per_worker"] = comm_wall / n;
    e["compute_wall_s_per_worker"] = compute_wall / n;
  }
  log_.write(e);
}

}  // namespace atl
