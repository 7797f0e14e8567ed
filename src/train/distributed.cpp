// Real runs: one worker per process over a DistGroup, through the same
// driver as simulate(). The observer's figures and parameters travel over the
// group's raw collectives, outside the ledger and the simulated clock.
#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "atoll/dist.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "train/checkpoint.h"
#include "train/cluster.h"
#include "train/driver.h"
#include "train/metrics.h"
#include "train/run_folder.h"
#include "train/stop_signal.h"
#include "train/threads.h"

namespace atl {
namespace {

// A peer's list of checkpoint steps ("4,8,12,"), strictly: each a decimal
// step in 0..10^15 followed by a comma. Throws naming `who` otherwise.
std::vector<int64_t> parse_step_list(const std::string& list, const std::string& who) {
  std::vector<int64_t> out;
  size_t start = 0;
  for (size_t end; (end = list.find(',', start)) != std::string::npos; start = end + 1) {
    const std::string digits = list.substr(start, end - start);
    if (digits.empty() || digits.size() > 15 || digits.find_first_not_of("0123456789") != std::string::npos)
      throw std::invalid_argument(who + " sent a checkpoint step list atoll cannot read: '" + digits.substr(0, 20) +
                                  "'");
    out.push_back(std::stoll(digits));
  }
  if (start != list.size()) throw std::invalid_argument(who + " sent a checkpoint step list without its last comma");
  return out;
}

class RealCluster final : public Cluster {
 public:
  explicit RealCluster(DistGroup& group) : group_(group) {}
  int64_t world() const override { return group_.size(); }
  std::vector<int64_t> local_ranks() const override { return {group_.rank()}; }
  // With islands the strategy's group is the cross-island one of this
  // rank's device index; the island's own group carries its gradients.
  Communicator& comm(int64_t) override { return group_.cross_comm() ? *group_.cross_comm() : group_.comm(); }
  Communicator* island_comm(int64_t) override { return group_.island_comm(); }
  bool is_leader() const override { return group_.rank() == 0; }
  bool real() const override { return true; }
  void meet(const std::function<void()>& observe) override { observe(); }

  std::vector<WorkerReport> reports(const std::vector<WorkerReport>& local) override {
    std::vector<WorkerReport> out;
    const std::vector<std::string> texts = group_.raw_all_gather_strings(local.at(0).to_json().dump());
    for (size_t r = 0; r < texts.size(); ++r) out.push_back(parse_worker_report(texts[r], "rank " + std::to_string(r)));
    return out;
  }

  // One flat buffer per rank (the model's parameters share one dtype), so a
  // single gather serves correlation and evaluation.
  std::vector<std::vector<at::Tensor>> params(const std::vector<std::vector<at::Tensor>>& local) override {
    const auto& mine = local.at(0);
    std::vector<at::Tensor> flat;
    for (const auto& p : mine) flat.push_back(p.detach().reshape({-1}));
    const std::vector<at::Tensor> gathered = group_.raw_all_gather(at::cat(flat));
    std::vector<std::vector<at::Tensor>> out;
    for (const auto& g : gathered) {
      std::vector<at::Tensor> tensors;
      int64_t offset = 0;
      for (const auto& p : mine) {
        tensors.push_back(g.narrow(0, offset, p.numel()).view(p.sizes()));
        offset += p.numel();
      }
      out.push_back(std::move(tensors));
    }
    return out;
  }

  void observed() override { group_.raw_barrier(); }
  bool any(bool mine) override {
    for (const auto& s : group_.raw_all_gather_strings(mine ? "1" : "0"))
      if (s == "1") return true;
    return false;
  }
  double measured_comm_seconds(int64_t) const override { return group_.measured_comm_seconds(); }
  void abort(const std::string& why) override { group_.report_failure(why); }

 private:
  DistGroup& group_;
};

}  // namespace

RunSummary train_distributed(const Config& cfg, const DistOptions& opts, const TrainHooks& hooks) {
  throw_if_errors(validate(cfg));
  validate(opts);
  if (cfg.strategy.workers != opts.world_size)
    throw std::invalid_argument("strategy.workers = " + std::to_string(cfg.strategy.workers) +
                                " but WORLD_SIZE = " + std::to_string(opts.world_size) +
                                "; a real run has one worker per rank (atoll train sets strategy.workers from "
                                "WORLD_SIZE unless given)");
  const IslandLayout layout = island_layout(cfg);
  auto group = connect_gloo(opts, parse_algorithm(cfg.network.algorithm), flat_lines(flatten(cfg)),
                            layout.devices > 1 ? layout.devices : 1);
  const bool leader = group->rank() == 0;
  const std::string& mode = cfg.run.resume;

  // Rank 0 alone owns the run folder and its metrics; every rank keeps its
  // own worker's checkpoints under it (on its own host's disk). The resume
  // policy (run_folder.h) is applied to what every rank holds: rank 0 checks
  // the folder, each rank lists its intact checkpoint steps.
  CheckpointPlan plan;
  plan.run_dir = run_folder(cfg);
  std::string folder = "ok", steps;
  if (mode != "false") {
    try {
      if (leader) find_resume_step(cfg, plan.run_dir, checkpoint_parts(cfg, 0));
    } catch (const std::exception& e) {
      folder = e.what();
    }
    for (int64_t s : CheckpointStore(plan.run_dir).complete_steps(checkpoint_parts(cfg, group->rank())))
      steps += std::to_string(s) + ",";
  }
  const std::string leader_folder = group->raw_all_gather_strings(folder).at(0);
  int64_t common_step = -1;  // the newest step every rank holds intact
  if (mode != "false") {
    std::map<int64_t, int64_t> holders;  // step -> ranks holding it
    const auto lists = group->raw_all_gather_strings(steps);
    for (size_t r = 0; r < lists.size(); ++r)
      for (int64_t step : parse_step_list(lists[r], "rank " + std::to_string(r))) ++holders[step];
    for (const auto& [step, count] : holders)
      if (count == int64_t(lists.size())) common_step = std::max(common_step, step);
  }
  const std::string problem = leader_folder == "ok" ? ""
                              : leader              ? leader_folder
                                                    : "rank 0 could not start the run: " + leader_folder;
  const StartPlan start = resolve_start(cfg, problem, common_step);  // the same on every rank
  const bool resume = start.resume;
  plan.resume_step = start.step;

  // A fresh start: rank 0 creates the folder; the others learn whether it could.
  std::string status = "ok";
  if (!resume && leader) {
    try {
      create_run_folder(cfg, start.replace);
    } catch (const std::exception& e) {
      status = e.what();
    }
  }
  const auto statuses = group->raw_all_gather_strings(status);
  for (size_t r = 0; r < statuses.size(); ++r)
    if (statuses[r] != "ok")
      throw std::runtime_error(int64_t(r) == group->rank()
                                   ? statuses[r]
                                   : "rank " + std::to_string(r) + " could not start the run: " + statuses[r]);
  std::unique_ptr<MetricsLog> log;
  if (resume && leader) log = reopen_for_resume(plan.run_dir, plan.resume_step);
  if (!log) log = std::make_unique<MetricsLog>(leader ? plan.run_dir.string() : "");
  RealCluster cluster(*group);
  // Ranks on one host share its cores like simulated workers do.
  const int64_t local_ranks = opts.local_world_size > 0 ? opts.local_world_size : opts.world_size;
  StopSignalScope signals;
  RunSummary s = run_on_cluster(cfg, cluster, *log, leader ? hooks : TrainHooks{},
                                threads_per_worker(cfg.run.threads, local_ranks), plan);
  group->finish();
  if (leader) {
    s.events = log->lines();
    s.run_dir = plan.run_dir.string();
    if (s.stopped_at < 0) write_summary(plan.run_dir, s);
  }
  return s;
}

}  // namespace atl
