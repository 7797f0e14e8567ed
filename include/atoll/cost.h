// `atoll cost`: what one sync and a whole run cost on a network, in closed
// form, without training (src/cost/). Above net (the collective algorithms'
// and island exchanges' formulas) and compress (each codec's exact encoded
// size), which it asks; the simulator charges the same formulas, and
// EveryCodec/CostEqualsLedger checks that the two agree.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/net.h"

namespace atl {

// `atoll cost`: what one sync and a whole run cost on a given network.
struct CostQuery {
  double params = 7e9;
  double bytes_per_element = 2;  // bf16; used when `codec` is ""
  // A payload codec (compress/codec_names.h: fp32, bf16, int8, fp4, topk, ...):
  // every payload is then that codec's exact encoded size of its elements,
  // block scales and top-k indices included, as the simulator's ledger
  // charges it; a sparse codec (topk) is all-gathered, as the simulator does.
  // codec_settings: codec.block, codec.topk_density (top-k is counted over
  // the whole payload, codec.topk_scope = global: per tensor, k is rounded per
  // tensor), codec.chunk and codec.chunk_topk (topk-chunk*: the payload as one
  // tensor cut into chunks). "" = bytes_per_element bytes per value.
  std::string codec;
  CodecConfig codec_settings;
  int64_t workers = 8;
  double bandwidth = 12.5e6;    // bytes/s (100 Mbit/s): each link's upload
  double download = 0;          // bytes/s: each link's download (0 = bandwidth, symmetric)
  double server_bandwidth = 0;  // bytes/s: the relay's (ps) link each way (0 = bandwidth)
  double latency = 0;
  CollectiveAlgo algo = CollectiveAlgo::Ring;
  std::string strategy = "ddp";  // ddp | localsgd | diloco | sparta
  int64_t inner_steps = 500;     // H (localsgd, diloco)
  double sparta_p = 0.005;       // p (sparta)
  int64_t steps = 1000;          // run length in inner steps
  double step_seconds = 0;       // compute per step (0 = communication only)
  // Islands (0 = none): `islands` I of `devices` D; then N = I*D devices,
  // `workers` is not used, `bandwidth`/`latency` are each device's
  // wide-area link and the sync runs as `exchange` says.
  int64_t islands = 0;
  int64_t devices = 1;
  double intra_bandwidth = 50e9;  // bytes/s inside an island (400 Gbit/s)
  double intra_latency = 0;
  std::string exchange = "all";  // an islands.exchange (flat | leader | sharded) or all: which get run totals
  bool shared_uplink = false;    // an island's devices share one wide-area link
};
// One exchange's figures for one sync and the run (per island: summed over its D devices).
struct IslandCostRow {
  std::string name;  // flat | leader | sharded, or ddp (flat, every step)
  double sync_seconds = 0;
  double sync_intra_seconds = 0;      // of sync_seconds, inside the island
  double wan_bytes_per_island = 0;    // sent over the wide-area links, one sync
  double wan_bytes_busiest_link = 0;  // sent by the device that sends most
  double intra_bytes_per_island = 0;  // sent over the links inside the island
  double syncs = 0;                   // in the run
  double run_wan_bytes_per_island = 0;
  double run_comm_seconds = 0;
  double run_total_seconds = 0;
  double compute_utilisation = 1;
  bool chosen = false;  // named by CostQuery::exchange (all: every one)
};
// One sync under one collective algorithm (no islands): `atoll cost`'s
// comparison of ring, tree and relay for the same payload.
struct AlgorithmCostRow {
  std::string name;  // the algorithm table's name
  double sync_seconds = 0;
  double sent = 0, received = 0;  // per worker, one sync
  bool chosen = false;            // CostQuery::algo
};
struct CostReport {
  double model_bytes = 0;         // one copy of the P values: P*b, or the codec's encoded size
  double one_copy_seconds = 0;    // model_bytes through one link, no latency
  double sync_payload_bytes = 0;  // S for one sync of this strategy
  double sync_bytes_sent = 0;     // per worker, one sync
  double sync_seconds = 0;        // one sync under the algorithm
  double syncs = 0;               // in the run
  double run_bytes_sent = 0;      // per worker, whole run
  double run_comm_seconds = 0;
  double run_total_seconds = 0;  // compute + blocking communication
  double compute_utilisation = 1;
  // With islands: the fields above are the flat exchange's (N = I*D); these
  // are flat, leader and sharded, then DDP's gradient all-reduce every step,
  // flat over all I*D devices.
  std::vector<IslandCostRow> exchanges;
  // Without islands: one sync of the same payload under every collective
  // algorithm (ring, tree, relay), the chosen one marked.
  std::vector<AlgorithmCostRow> algorithms;
  IslandCostRow ddp;
  double island_ddp_step_seconds = 0;  // DDP inside one island each step (ring over D, intra links)
};
CostReport estimate_cost(const CostQuery& q);
// Which of `atoll cost`'s flags contradict each other (src/cost/cost_query.cpp):
// `given` names the flags the user set ("--devices", "--workers", ...).
// Island flags need --islands; --workers must equal I x D with islands.
// Throws std::invalid_argument naming the flag and what to do.
void check_cost_flags(const CostQuery& q, const std::vector<std::string>& given);
// The values CostQuery::codec takes: the codec table's ("fp32 | fp16 | ... | topk").
std::string cost_codec_choices();
// Human-readable table of a CostReport (durations as "1120 s (18.7 min)").
std::string format_cost(const CostQuery& q, const CostReport& r);

}  // namespace atl
