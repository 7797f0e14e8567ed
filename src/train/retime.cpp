// atoll retime: a finished run's events on another network, from its timing
// traces (see atoll/retime.h).
#include "atoll/retime.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

#include "atoll/net.h"
#include "atoll/setup.h"
#include "model/export.h"
#include "train/metrics.h"
#include "train/observer.h"
#include "train/replay.h"
#include "train/run_folder.h"
#include "train/timing_files.h"
#include "train/worker_report.h"
#include "util/file_io.h"
#include "util/json_input.h"

namespace atl {
namespace fs = std::filesystem;
namespace {

// Keys whose change moves only the clock and the ledger: the trajectory, the
// compute charges and the order of every call stay as recorded.
const std::set<std::string>& retimable_keys() {
  static const std::set<std::string> keys = {"network.bandwidth",
                                             "network.latency",
                                             "network.jitter",
                                             "network.algorithm",
                                             "network.server_bandwidth",
                                             "network.worker_bandwidth",
                                             "network.worker_latency",
                                             "network.outages",
                                             "network.intra_bandwidth",
                                             "network.intra_latency",
                                             "network.island_bandwidth",
                                             "network.island_latency",
                                             "network.island_uplink",
                                             "islands.exchange",
                                             "network.download_bandwidth",
                                             "network.worker_download_bandwidth",
                                             "network.island_download_bandwidth"};
  return keys;
}

std::string override_key(const std::string& item) {
  std::string key = item.substr(0, item.find('='));
  while (!key.empty() && key[0] == '-') key.erase(0, 1);
  return key;
}

std::vector<nlohmann::json> read_events(const fs::path& dir) {
  const std::string path = (dir / "metrics.jsonl").string();
  std::istringstream lines(read_file_bytes(path));
  std::vector<nlohmann::json> events;
  std::string line;
  for (int64_t line_no = 1; std::getline(lines, line); ++line_no)
    if (!line.empty()) events.push_back(parse_json_input(line, path + " line " + std::to_string(line_no)));
  return events;
}

// The observer's figures over every worker at step s, summed in rank order
// as the observer sums them.
struct StepTotals {
  double sim_time = 0, compute = 0, blocked = 0, sent = 0, received = 0, intra_sent = 0;
};
StepTotals totals_at(const std::vector<ReplayedWorker>& workers, int64_t step) {
  StepTotals t;
  for (const auto& w : workers) {
    if (step < 0 || step >= int64_t(w.at_step.size()))
      throw TraceError("the events name step " + std::to_string(step) + " but the timing traces hold " +
                       std::to_string(w.at_step.size() - 1) + " steps");
    const ReplayReading& r = w.at_step[size_t(step)];
    t.intra_sent += r.intra_sent;
    t.sim_time = std::max(t.sim_time, r.now);
    t.compute += r.compute;
    t.blocked += r.blocked;
    t.sent += r.sent;
    t.received += r.received;
  }
  return t;
}

// Rewrites every figure that depends on the network; the rest (losses,
// wall-clock times, the parameters' hashes) stays as the run measured it.
class EventRewriter {
 public:
  EventRewriter(const std::vector<ReplayedWorker>& workers, const NetworkModel& net, const Config& cfg)
      : workers_(workers), outages_(net.outages()), n_(double(workers.size())), exchange_(cfg.islands.exchange) {}

  std::vector<std::string> rewrite(const std::vector<nlohmann::json>& events) {
    std::vector<std::string> out;
    int64_t observed = -1;
    for (nlohmann::json e : events) {
      const std::string kind = e.value("event", "");
      if (kind == "fault" && e.value("kind", "") == "outage") continue;  // logged again below, at the new times
      if (kind == "train" || kind == "eval") {
        const int64_t step = e.at("step").get<int64_t>();
        const StepTotals t = totals_at(workers_, step);
        if (step != observed) {  // an observation's first event: the outages its clock has reached
          for (; logged_ < outages_.size() && outages_[logged_].from <= t.sim_time; ++logged_)
            out.push_back(outage_event_line(step, outages_[logged_]));
          observed = step;
        }
        e["sim_time_s"] = t.sim_time;
        e["compute_s"] = t.compute / n_;
        e["blocked_s"] = t.blocked / n_;
        e["utilisation"] = t.sim_time > 0 ? (t.compute / n_) / t.sim_time : 1.0;
        e["bytes_sent_per_worker"] = t.sent / n_;
        e["bytes_received_per_worker"] = t.received / n_;
        if (e.contains("intra_bytes_sent_per_worker")) e["intra_bytes_sent_per_worker"] = t.intra_sent / n_;
        if (kind == "train") {
          e["bytes_sent_per_worker_per_step"] =
              (t.sent / n_ - logged_sent_) / double(std::max<int64_t>(1, step - logged_step_));
          logged_sent_ = t.sent / n_;
          logged_step_ = step;
        }
      } else if (kind == "end") {
        rewrite_end(e);
      } else if (kind == "start" && e.contains("exchange")) {
        e["exchange"] = exchange_;  // the islands' pattern is a retimable key
      }
      out.push_back(e.dump());
    }
    return out;
  }

  void rewrite_end(nlohmann::json& e) const {
    const int64_t last = int64_t(workers_[0].at_step.size()) - 1;
    const StepTotals t = totals_at(workers_, last);
    e["sim_time_s"] = t.sim_time;
    e["compute_utilisation"] = t.sim_time > 0 ? (t.compute / n_) / t.sim_time : 1.0;
    e["bytes_sent_per_worker"] = t.sent / n_;
    nlohmann::json by_tag = nlohmann::json::object(),
                   per_worker = e.value("ledger_per_worker", nlohmann::json::array());
    double network = 0, intra_network = 0;
    for (size_t r = 0; r < workers_.size(); ++r) {
      const ReplayReading& end = workers_[r].at_step.back();
      network += end.network_s;
      intra_network += end.intra_network_s;
      for (const auto& [tag, bytes] : workers_[r].sent_by_tag) by_tag[tag] = by_tag.value(tag, 0.0) + bytes;
      if (r >= per_worker.size()) continue;
      nlohmann::json& w = per_worker[r];
      w["sent"] = end.sent;
      w["received"] = end.received;
      w["ops"] = end.ops;
      w["network_model_s"] = end.network_s;
      if (w.contains("intra_sent")) {
        w["intra_sent"] = end.intra_sent;
        w["intra_received"] = end.intra_received;
        w["intra_network_model_s"] = end.intra_network_s;
      }
    }
    e["ledger_per_worker"] = per_worker;
    e["bytes_sent_by_tag_total"] = by_tag;
    // Received bytes and the peak from the replayed ledgers; the split by
    // part from each tag's shares in the recorded run (a message holds the
    // same parts on any network).
    nlohmann::json received_by_tag = nlohmann::json::object();
    double peak = 0;
    for (const ReplayedWorker& w : workers_) {
      for (const auto& [tag, bytes] : w.received_by_tag) received_by_tag[tag] = received_by_tag.value(tag, 0.0) + bytes;
      peak = std::max(peak, w.peak_sent);
    }
    e["bytes_received_by_tag_total"] = received_by_tag;
    if (e.contains("peak_sent_bytes_per_worker")) {
      e["peak_sent_bytes_per_worker"] = peak;
      const double steps = double(workers_[0].at_step.size()) - 1;
      e["peak_bandwidth_per_worker"] = peak_bandwidth(peak, e.value("peak_window_steps", 1.0), t.compute / n_, steps);
    }
    if (e.contains("bytes_sent_by_part_per_worker")) {
      const nlohmann::json shares = e.value("part_shares_by_tag", nlohmann::json::object());
      double indices = 0, scales = 0, total = 0;
      for (const auto& [tag, bytes] : by_tag.items()) {
        const double b = bytes.get<double>();
        total += b;
        const auto it = shares.find(tag);
        if (it == shares.end() || !it->is_array() || it->size() != 3) continue;
        indices += b * (*it)[1].get<double>();
        scales += b * (*it)[2].get<double>();
      }
      e["bytes_sent_by_part_per_worker"] = {
          {"values", (total - indices - scales) / n_}, {"indices", indices / n_}, {"scales", scales / n_}};
    }
    e["network_model_s_per_worker"] = network / n_;
    if (e.contains("intra_bytes_sent_per_worker")) {
      e["intra_bytes_sent_per_worker"] = t.intra_sent / n_;
      e["intra_network_model_s_per_worker"] = intra_network / n_;
    }
  }

 private:
  const std::vector<ReplayedWorker>& workers_;
  const std::vector<Outage>& outages_;
  double n_;
  std::string exchange_;
  size_t logged_ = 0;
  double logged_sent_ = 0;
  int64_t logged_step_ = 0;
};

// A projection's factors from the run's own figures (its start event and its
// compute per step).
void projection_scales(const Projection& p, const std::vector<nlohmann::json>& events, RetimedRun& out) {
  if (!p.active()) return;
  double params = 0, tokens_per_step = 0, compute_per_step = 0;
  for (const auto& e : events) {
    if (e.value("event", "") == "start") {
      params = e.value("params", 0.0);
      tokens_per_step = e.value("tokens_per_step_per_worker", 0.0);
    }
    if (e.value("event", "") == "train" && e.value("step", 0) > 0)
      compute_per_step = e.value("compute_s", 0.0) / e.value("step", 1.0);
  }
  if (params <= 0 || compute_per_step <= 0)
    throw std::invalid_argument(
        "a projection needs the run's parameter count (start event) and a train event with compute");
  out.bytes_scale = p.params / params;
  double step_seconds = p.step_seconds;
  if (step_seconds <= 0 && p.device_flops > 0) {
    if (tokens_per_step <= 0)
      throw std::invalid_argument(
          "a projection from device FLOP/s needs the run's tokens per step (its start event "
          "has none); give --project-step-time instead");
    // Training FLOPs of a step: 6 per parameter per token (forward and backward).
    step_seconds = 6.0 * p.params * tokens_per_step / (p.device_flops * p.mfu);
  }
  if (step_seconds <= 0)
    throw std::invalid_argument("a projection needs --project-step-time or --project-device-flops with --project-mfu");
  out.compute_scale = step_seconds / compute_per_step;
}

}  // namespace

bool retimable_key(const std::string& key) { return retimable_keys().count(key) > 0; }

namespace {
// The overrides without leading dashes; throws for a key retime cannot change.
std::vector<std::string> retimable_overrides(const std::vector<std::string>& overrides) {
  std::vector<std::string> items;
  for (const auto& item : overrides) {
    const std::string key = override_key(item);
    if (!retimable_key(key))
      throw std::invalid_argument(
          "retime changes only the network, not '" + key +
          "': the run's trajectory and compute stay as recorded (compute_time, device, mfu and speed_factors change "
          "the compute; other keys change what is trained). Retimable: network.bandwidth, latency, jitter, algorithm, "
          "server_bandwidth, worker_bandwidth, worker_latency, outages, intra_bandwidth, intra_latency, "
          "island_bandwidth, island_latency, island_uplink, download_bandwidth, worker_download_bandwidth, "
          "island_download_bandwidth, islands.exchange");
    items.push_back(item.substr(item.find_first_not_of('-')));
  }
  return items;
}
}  // namespace

struct RunRetimer::Loaded {
  std::string dir;
  std::vector<nlohmann::json> events;
  nlohmann::json summary;
  int64_t workers = 0;
  std::vector<TimingTrace> traces;
};

RunRetimer::RunRetimer(const std::string& run_dir) : loaded_(std::make_unique<Loaded>()) {
  const fs::path dir(run_dir);
  if (!fs::exists(dir / "summary.json"))
    throw std::invalid_argument("'" + run_dir +
                                "' is not a finished run (no summary.json): retime replays finished runs");
  loaded_->dir = run_dir;
  loaded_->events = read_events(dir);
  const std::string summary_path = (dir / "summary.json").string();
  loaded_->summary = parse_json_input(read_file_bytes(summary_path), summary_path);
  const Config cfg = load_config((dir / "config.toml").string(), {});
  loaded_->workers = cfg.strategy.workers;
  loaded_->traces = read_timing_traces(dir, loaded_->workers);
  // Checked before any replay: a corrupt repeat count could describe a
  // practically endless run.
  for (size_t r = 0; r < loaded_->traces.size(); ++r)
    if (loaded_->traces[r].steps() != cfg.train.steps)
      throw TraceError(timing_trace_path(dir, int64_t(r)).string() + " holds " +
                       std::to_string(loaded_->traces[r].steps()) + " steps but the run trained " +
                       std::to_string(cfg.train.steps));
}
RunRetimer::~RunRetimer() = default;
RunRetimer::RunRetimer(RunRetimer&&) noexcept = default;
const std::string& RunRetimer::dir() const { return loaded_->dir; }

RetimedRun RunRetimer::retime(const std::vector<std::string>& overrides, const Projection& projection) const {
  const std::vector<std::string> items = retimable_overrides(overrides);
  const Loaded& run = *loaded_;
  RetimedRun out;
  out.config = load_config((fs::path(run.dir) / "config.toml").string(), items);
  projection_scales(projection, run.events, out);
  const std::vector<ReplayedWorker> workers =
      replay_traces(out.config, run.traces, ReplayScale{out.bytes_scale, out.compute_scale});
  const NetworkModel net = NetworkModel::from_config(out.config.network, out.config.strategy.workers,
                                                     static_cast<uint64_t>(out.config.run.seed));
  EventRewriter rewriter(workers, net, out.config);
  out.events = rewriter.rewrite(run.events);

  nlohmann::json summary = run.summary;
  const nlohmann::json end = nlohmann::json::parse(out.events.back());
  if (end.value("event", "") == "end") {
    summary["end"] = end;
    summary["sim_time_s"] = end["sim_time_s"];
    summary["compute_utilisation"] = end["compute_utilisation"];
    summary["bytes_sent_per_worker"] = end["bytes_sent_per_worker"];
    if (end.contains("intra_bytes_sent_per_worker"))
      summary["intra_bytes_sent_per_worker"] = end["intra_bytes_sent_per_worker"];
  }
  summary["retimed"] = {{"from", run.dir}, {"changes", items}};
  if (projection.active())
    summary["projection"] = {{"params", projection.params},
                             {"bytes_scale", out.bytes_scale},
                             {"compute_scale", out.compute_scale},
                             {"assumes", "the recorded run's loss per step (the small model's step-loss curve)"}};
  out.summary_json = summary.dump(2) + "\n";
  return out;
}

RetimedRun retime_run(const std::string& run_dir, const std::vector<std::string>& overrides,
                      const Projection& projection) {
  retimable_overrides(overrides);  // a wrong key is reported before the run is read
  return RunRetimer(run_dir).retime(overrides, projection);
}

void write_retimed_run(const RetimedRun& run, const std::string& run_dir, const std::string& out_dir, bool overwrite) {
  const fs::path out(out_dir);
  if (fs::exists(out) && !fs::is_empty(out)) {
    if (!overwrite) throw std::runtime_error("'" + out_dir + "' already exists; choose another -o or pass --overwrite");
    if (fs::equivalent(out, fs::path(run_dir)))
      throw std::runtime_error("retime writes a new folder; -o names the run itself");
    remove_run_folder(out, "--overwrite");
  }
  fs::create_directories(out);
  write_file_atomic((out / "config.toml").string(),
                    std::string(kRunConfigHeader) + " (retimed)\n" + to_toml(run.config));
  {
    MetricsLog log(out.string());
    for (const auto& line : run.events) log.write(nlohmann::json::parse(line));
  }
  fs::create_directories(out / "timing");
  for (int64_t r = 0; r < run.config.strategy.workers; ++r)
    fs::copy_file(timing_trace_path(run_dir, r), timing_trace_path(out, r), fs::copy_options::overwrite_existing);
  // The same trained model: the network changes only the clock.
  for (const char* kept : {kRunModelFile, kRunModuleFile})
    if (fs::exists(fs::path(run_dir) / kept)) fs::copy_file(fs::path(run_dir) / kept, out / kept);
  write_file_atomic((out / "summary.json").string(), run.summary_json);
}

}  // namespace atl
