// Google Benchmark micro-benchmarks of the simulator's own machinery: the
// in-process all-reduce (what a simulated collective costs in real time) and
// the network model's arithmetic. Figures only.
//   build/bench_micro [--benchmark_filter=...]
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <thread>
#include <vector>

#include "atoll/comm.h"
#include "atoll/net.h"

namespace {

// One all-reduce of `elements` floats on `ranks` threads, repeated.
void BM_InProcessAllReduce(benchmark::State& state) {
  const int64_t ranks = state.range(0), elements = state.range(1);
  for (auto _ : state) {
    state.PauseTiming();
    atl::InProcessGroup group(ranks);
    std::vector<at::Tensor> data;
    for (int64_t r = 0; r < ranks; ++r) data.push_back(at::full({elements}, float(r)));
    state.ResumeTiming();
    std::vector<std::thread> threads;
    for (int64_t r = 0; r < ranks; ++r)
      threads.emplace_back([&, r] {
        for (int i = 0; i < 10; ++i) group.rank(r).all_reduce(data[r], atl::ReduceOp::Mean, "bench");
      });
    for (auto& t : threads) t.join();
  }
  state.SetBytesProcessed(state.iterations() * 10 * ranks * elements * int64_t(sizeof(float)));
}
BENCHMARK(BM_InProcessAllReduce)->Args({2, 1 << 10})->Args({4, 1 << 20})->Args({8, 1 << 20})->UseRealTime();

void BM_NetworkModelCollectiveSeconds(benchmark::State& state) {
  atl::NetworkModel net(std::vector<atl::Link>(8, atl::Link{12.5e6, 0.03}), atl::CollectiveAlgo::Ring, 0, 0.001, 1);
  uint64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(net.collective_seconds(atl::CommOp::AllReduce, 4e6, i++));
}
BENCHMARK(BM_NetworkModelCollectiveSeconds);

}  // namespace

BENCHMARK_MAIN();
