// Real runs: one worker per process over a DistGroup, through the same
// driver as simulate(). The observer's figures and parameters travel over the
// group's raw collectives, outside the ledger and the simulated clock.
#include <ATen/ATen.h>

#include <filesystem>
#include <stdexcept>

#include "atoll/dist.h"
#include "train/cluster.h"
#include "train/driver.h"
#include "train/metrics.h"
#include "train/threads.h"

namespace atl {
namespace {

class RealCluster final : public Cluster {
 public:
  explicit RealCluster(DistGroup& group) : group_(group) {}
  int64_t world() const override { return group_.size(); }
  std::vector<int64_t> local_ranks() const override { return {group_.rank()}; }
  Communicator& comm(int64_t) override { return group_.comm(); }
  bool is_leader() const override { return group_.rank() == 0; }
  bool real() const override { return true; }
  void meet(const std::function<void()>& observe) override { observe(); }

  std::vector<WorkerReport> reports(const std::vector<WorkerReport>& local) override {
    std::vector<WorkerReport> out;
    for (const auto& s : group_.raw_all_gather_strings(local.at(0).to_json().dump()))
      out.push_back(WorkerReport::from_json(nlohmann::json::parse(s)));
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
    throw std::invalid_argument("strategy.workers = " + std::to_string(cfg.strategy.workers) + " but WORLD_SIZE = " +
                                std::to_string(opts.world_size) +
                                "; a real run has one worker per rank (atoll train sets strategy.workers from "
                                "WORLD_SIZE unless given)");
  Config resolved = cfg;  // to_toml visits fields through non-const references
  auto group = connect_gloo(opts, parse_algorithm(cfg.network.algorithm), to_toml(resolved));
  const bool leader = group->rank() == 0;

  // Rank 0 alone owns the run folder; the others learn whether it could.
  std::filesystem::path dir;
  std::string status = "ok";
  if (leader) {
    try {
      dir = create_run_folder(cfg);
    } catch (const std::exception& e) {
      status = e.what();
    }
  }
  const std::string rank0_status = group->raw_all_gather_strings(status).at(0);
  if (rank0_status != "ok")
    throw std::runtime_error(leader ? rank0_status : "rank 0 could not start the run: " + rank0_status);

  MetricsLog log(leader ? dir.string() : "");
  RealCluster cluster(*group);
  // Ranks on one host share its cores like simulated workers do.
  const int64_t local_ranks = opts.local_world_size > 0 ? opts.local_world_size : opts.world_size;
  RunSummary s = run_on_cluster(cfg, cluster, log, leader ? hooks : TrainHooks{},
                                threads_per_worker(cfg.run.threads, local_ranks));
  group->finish();
  if (leader) {
    s.events = log.lines();
    s.run_dir = dir.string();
    write_summary(dir, s);
  }
  return s;
}

}  // namespace atl
