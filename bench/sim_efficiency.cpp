// Simulation overhead: wall time of N simulated workers for S steps against
// N x the wall time of one worker for S steps, same model and batch per
// worker. Efficiency = N * T(1) / T(N); 1.0 means simulating costs nothing
// beyond the workers' own compute. Prints figures only.
//   build/bench_sim_efficiency [steps] [config.toml] [section.key=value ...]
// Needs the prepared Brown corpus (scripts/setup).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "atoll/config.h"
#include "atoll/train.h"
#include "train/threads.h"

int main(int argc, char** argv) try {
  const int64_t steps = argc > 1 ? std::stoll(argv[1]) : 60;
  const std::string path = argc > 2 ? argv[2] : std::string(ATOLL_SOURCE_DIR) + "/configs/small_gpt_brown.toml";
  std::vector<std::string> overrides(argv + std::min(argc, 3), argv + argc);
  overrides.push_back("train.steps=" + std::to_string(steps));
  overrides.push_back("train.eval_every=0");
  overrides.push_back("train.eval_batches=1");
  overrides.push_back("run.progress=false");
  overrides.insert(overrides.begin(), std::string("data.data_root=") + ATOLL_SOURCE_DIR + "/data");

  auto wall = [&](const std::string& strategy, int64_t workers) {
    auto o = overrides;
    o.push_back("strategy.name=" + strategy);
    o.push_back("strategy.workers=" + std::to_string(workers));
    // Best of three: the machine is shared, and the minimum is the least disturbed run.
    double best = 1e300;
    for (int r = 0; r < 3; ++r) best = std::min(best, atl::simulate(atl::load_config(path, o)).wall_seconds);
    return best;
  };
  const double t1 = wall("single", 1);
  std::printf("one worker, %lld steps: %.2f s\n", (long long)steps, t1);
  // A fairer yardstick when one small worker cannot use every core: the same
  // worker on one thread, with `cores` of them running side by side.
  overrides.push_back("run.threads=1");
  const double t1_one_thread = wall("single", 1);
  overrides.pop_back();
  const int64_t cores = atl::available_cores();
  std::printf("one worker on one thread: %.2f s (%lld cores)\n", t1_one_thread, (long long)cores);
  for (const char* strategy : {"diloco", "ddp"}) {
    for (int64_t n : {4, 8}) {
      const double tn = wall(strategy, n);
      const double ideal = double(n) * t1_one_thread / double(std::min<int64_t>(cores, n));
      std::printf(
          "%-6s N=%lld: %.2f s; N x T(1) = %.2f s, efficiency N*T(1)/T(N) = %.3f; "
          "vs one-thread workers on all cores (%.2f s): %.3f\n",
          strategy, (long long)n, tn, double(n) * t1, double(n) * t1 / tn, ideal, ideal / tn);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_sim_efficiency: %s\n", e.what());
  return 1;
}
