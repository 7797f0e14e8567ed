// Network model and virtual clock (ALGORITHMS.md section 7).
//
// Pure arithmetic on bytes and seconds: never touches tensors' values.
// Thread-safety: NetworkModel is immutable after construction and may be
// shared; each VirtualClock belongs to one worker.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// "100Mbit/s", "1Gbit/s", "25GB/s", "10 MB/s", "1e9" (bytes/s) -> bytes per second.
// Accepts bit/s, bps, b/s (bits) and B/s (bytes) with k, M, G, T prefixes
// (decimal). Throws std::invalid_argument naming the accepted forms.
double parse_bandwidth(const std::string& text);
// "30ms", "0.5s", "250us", "0" -> seconds. Throws std::invalid_argument.
double parse_duration(const std::string& text);
// "1,,0.5" -> {1, nan, 0.5}-style list: empty entries become `fallback`.
std::vector<double> parse_number_list(const std::string& text, double fallback);

// Kinds of communication the ledger records and the model times.
enum class CommOp { AllReduce, AllGather, Broadcast, Barrier, Exchange, Send, Recv };
enum class CollectiveAlgo { Ring, Tree, ParameterServer };
// The collective algorithm table (src/net/collective_algorithms.h) spells them.
CollectiveAlgo parse_algorithm(const std::string& name);  // ring | tree | ps (or parameter-server)
std::string to_string(CommOp op);
std::string to_string(CollectiveAlgo algo);
// "ring | tree | ps (or parameter-server)": help and errors.
std::string collective_algorithm_choices();

// Bytes one rank sends and receives for one op whose per-rank payload is
// `payload` bytes (ALGORITHMS.md section 7.2):
//   all-reduce ring / tree: 2(N-1)/N * S each way; parameter server: S up, S down
//   all-gather: (N-1) * S each way (each rank's S reaches N-1 peers)
//   broadcast: root sends S, every other rank receives S
//   exchange (pairwise): S each way; send: S sent; recv: S received; barrier: 0
// A world of 1 moves 0 bytes. Variable-size all-gathers are counted by the
// communicator from the actual sizes (sent (N-1)*S_own, received sum of others).
struct ByteCount {
  double sent = 0;
  double received = 0;
};
ByteCount bytes_for(CommOp op, CollectiveAlgo algo, double payload, int64_t world, bool is_root);

// A worker's link is down from `from` to `to` (simulated seconds).
struct Outage {
  int64_t worker = 0;
  double from = 0, to = 0;
};
// network.outages ("1@30s-60s, 2@100s-130s"); throws std::invalid_argument.
std::vector<Outage> parse_outages(const std::string& text, int64_t workers);

// Per-worker link: upload bandwidth (bytes/s), latency (s) and download
// bandwidth (bytes/s; 0 = the same as the upload: a symmetric link). Home and
// office links upload far slower than they download (the Covenant-72B run:
// 110 Mbit/s up, 500 down).
struct Link {
  double bandwidth = 125e6;  // upload
  double latency = 0;
  double download = 0;  // 0: = bandwidth
  double down() const { return download > 0 ? download : bandwidth; }
};

class NetworkModel {
 public:
  NetworkModel(std::vector<Link> links, CollectiveAlgo algo, double server_bandwidth, double jitter, uint64_t seed);
  // From [network] for `workers` workers; throws std::invalid_argument.
  static NetworkModel from_config(const NetworkConfig& cfg, int64_t workers, uint64_t seed);

  // Seconds for one op among `participants` (ranks) with per-rank payload S
  // bytes: the largest latency sets alpha (formulas of ALGORITHMS.md 7.2).
  // Every byte leaves one rank's uplink and enters another's downlink, so a
  // ring, a tree, a broadcast and an exchange run at beta = the slowest
  // uplink or downlink among the participants (the slowest uplink when links
  // upload slower than they download). The relay (ps) takes each worker's
  // payload up once, at the slowest uplink, and sends the result down, at
  // the slowest downlink, with its own link (server_bandwidth) carrying N
  // payloads each way: an all-gather through it is bound by the receivers'
  // downlinks. `op_index` seeds the jitter so every rank computes the same
  // time for the same op.
  double op_seconds(CommOp op, double payload, const std::vector<int64_t>& participants, uint64_t op_index) const;
  // The same formula for `n` ranks whose links are those of `participants`
  // (a flat ring over every device of the participating islands).
  double op_seconds_for(CommOp op, double payload, const std::vector<int64_t>& participants, int64_t n,
                        uint64_t op_index) const;
  // The same for all ranks 0..N-1.
  double collective_seconds(CommOp op, double payload, uint64_t op_index) const;

  CollectiveAlgo algorithm() const { return algo_; }
  int64_t workers() const { return static_cast<int64_t>(links_.size()); }
  const Link& link(int64_t rank) const { return links_.at(rank); }
  // The earliest time >= t at which every participant's link is up (all
  // ranks when `participants` is empty): an op due to start during an
  // outage starts when the link is back.
  double link_available_at(double t, const std::vector<int64_t>& participants) const;
  const std::vector<Outage>& outages() const { return outages_; }
  // The same network with every link's bandwidth times `factor` (> 0).
  NetworkModel with_bandwidth_scaled(double factor) const;

 private:
  std::vector<Link> links_;
  CollectiveAlgo algo_;
  double server_bandwidth_;
  double jitter_;
  uint64_t seed_;
  std::vector<Outage> outages_;
};

// --- Islands: a two-level network (ALGORITHMS.md 7.2, islands table) -------
//
// I islands of D devices. Inside an island the devices share fast links
// (`intra`); islands reach each other over wide-area links (one per island,
// which each of its devices may use). A cross-island op is run by the
// islands together; `islands.exchange` says how its payload travels:
//   flat:    every device in one ring over the wide-area links;
//   leader:  reduce inside the island, the leaders run the op over the
//            wide-area links, the leader broadcasts the result inside (1-to-N);
//   sharded: each device carries 1/D of the payload over its own wide-area
//            link (reduce-scatter inside, the op across, all-gather inside).
enum class IslandExchange { Flat, Leader, Sharded };
// The island exchange table (src/net/island_exchanges.h) spells them.
IslandExchange parse_exchange(const std::string& name);  // flat | leader | sharded
std::string to_string(IslandExchange exchange);
// "flat | leader | sharded": help and errors.
std::string island_exchange_choices();

// What one op costs one device: bytes on each link class and network time.
struct OpCharge {
  double sent = 0, received = 0;              // over the wide-area links (between islands)
  double intra_sent = 0, intra_received = 0;  // over the links inside the island
  double seconds = 0;                         // network time of the whole op
  double intra_seconds = 0;                   // the part of `seconds` spent inside the island
};

class IslandNetwork {
 public:
  // `wan`: one link per island (its wide-area link), with the collective
  // algorithm and the jitter of the wide-area ops; `intra`: the links
  // inside every island; `devices` D >= 1.
  // `shared_uplink`: an island's D devices share its one wide-area link
  // (an office or a data centre behind one internet connection), so the
  // patterns that keep every device's link busy at once (flat, sharded)
  // get beta / D each; false: every device has a link of its own (as
  // ALGORITHMS.md's table assumes: sharded spreads the payload "over D links").
  IslandNetwork(NetworkModel wan, Link intra, int64_t devices, IslandExchange exchange, bool shared_uplink = false);

  // The charge to device `device` (0..D-1; 0 is the island's leader) of a
  // cross-island op. `payload`: this device's payload S (bytes).
  // `largest`: the largest payload of any island (all-gather of differing
  // sizes; = payload otherwise) — it sets the op's time. `others`: bytes the
  // op brings from the other islands to one island (all-gather: the sum of
  // the others' payloads; otherwise unused). `participants`: the islands
  // taking part (empty = all). `is_root`: broadcast root island.
  OpCharge charge(CommOp op, double payload, double largest, double others, int64_t device, bool is_root,
                  const std::vector<int64_t>& participants, uint64_t op_index) const;

  int64_t islands() const { return wan_.workers(); }
  int64_t devices() const { return devices_; }
  IslandExchange exchange() const { return exchange_; }
  const NetworkModel& wan() const { return wan_; }
  const Link& intra() const { return intra_; }
  bool shared_uplink() const { return shared_uplink_; }

 private:
  NetworkModel wan_;
  NetworkModel wan_per_device_;  // = wan_, or its links at beta / D when the uplink is shared
  bool shared_uplink_;
  Link intra_;
  int64_t devices_;
  IslandExchange exchange_;
};

// The two-level network from the config (islands.devices > 1):
// wan_network: one link per island (network.bandwidth / latency with the
// network.island_* overrides), the collective algorithm and the jitter;
// intra_network: the D links of one island (network.intra_*; no jitter: it
// models the internet's); island_network: both with islands.exchange.
// Throw std::invalid_argument naming the key.
NetworkModel wan_network(const Config& cfg, uint64_t seed);
NetworkModel intra_network(const Config& cfg, uint64_t seed);
IslandNetwork island_network(const Config& cfg, uint64_t seed);

// One worker's simulated time. Compute advances it; a blocking op moves it
// to the op's completion time and counts the gap as blocked communication.
class VirtualClock {
 public:
  double now() const { return now_; }
  double compute_seconds() const { return compute_; }
  double blocked_seconds() const { return blocked_; }
  // Compute utilisation: compute / now (1 when nothing has happened yet).
  double utilisation() const { return now_ > 0 ? compute_ / now_ : 1.0; }
  void advance_compute(double seconds);
  // Waits for an event finishing at simulated time `t` (no-op if already past).
  void wait_until(double t);
  // Checkpoints: restores a saved clock.
  void restore(double now, double compute, double blocked) {
    now_ = now;
    compute_ = compute;
    blocked_ = blocked;
  }

 private:
  double now_ = 0, compute_ = 0, blocked_ = 0;
};

}  // namespace atl
