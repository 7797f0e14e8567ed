#include "net/collective_algorithms.h"

#include <algorithm>
#include <stdexcept>

#include "net/rounds.h"

namespace atl {
namespace {

// The share of S each rank moves each way in a ring or tree all-reduce:
// 2(N-1)/N * S over the slowest link (reduce-scatter, then all-gather).
double reduce_scatter_gather_seconds(const AllReduceShape& a) {
  const double nd = static_cast<double>(a.n);
  return 2.0 * (nd - 1.0) / nd * a.payload / a.beta;
}

double ring_seconds(const AllReduceShape& a) {
  return 2.0 * (static_cast<double>(a.n) - 1.0) * a.alpha + reduce_scatter_gather_seconds(a);
}

// Recursive halving/doubling: lg(N) rounds each way, the ring's volume.
double tree_seconds(const AllReduceShape& a) {
  return 2.0 * static_cast<double>(ceil_log2(a.n)) * a.alpha + reduce_scatter_gather_seconds(a);
}

// The relay's (parameter server's) link: network.server_bandwidth, or the
// workers' slowest link when not given.
double server_rate(const AllReduceShape& a) { return a.server_bandwidth > 0 ? a.server_bandwidth : a.beta; }

// Every worker sends S up its uplink and gets the S-byte result down its
// downlink; the relay's link carries N * S each way.
double parameter_server_seconds(const AllReduceShape& a) {
  const double nd = static_cast<double>(a.n), server = server_rate(a);
  return 2.0 * a.alpha + std::max(a.payload / a.up, nd * a.payload / server) +
         std::max(a.payload / a.down, nd * a.payload / server);
}

// Ring all-gather: N - 1 hops, each rank forwards (N - 1) S over its link.
double ring_gather_seconds(const AllReduceShape& a) {
  const double hops = static_cast<double>(a.n) - 1.0;
  return hops * a.alpha + hops * a.payload / a.beta;
}

// Recursive doubling: lg(N) rounds, the ring's volume.
double tree_gather_seconds(const AllReduceShape& a) {
  return static_cast<double>(ceil_log2(a.n)) * a.alpha + (static_cast<double>(a.n) - 1.0) * a.payload / a.beta;
}

// Through the relay: each worker uploads its S once; each downloads the
// N - 1 others' (its downlink), the relay sends N (N - 1) S in all.
double parameter_server_gather_seconds(const AllReduceShape& a) {
  const double nd = static_cast<double>(a.n), server = server_rate(a);
  return 2.0 * a.alpha + std::max(a.payload / a.up, nd * a.payload / server) +
         std::max((nd - 1.0) * a.payload / a.down, nd * (nd - 1.0) * a.payload / server);
}

// Ring and recursive halving/doubling move the same volume.
ByteCount ring_bytes(double n, double s) {
  ByteCount c;
  c.sent = c.received = 2.0 * (n - 1.0) / n * s;
  return c;
}

ByteCount parameter_server_bytes(double, double s) {
  ByteCount c;
  c.sent = s;      // worker -> server
  c.received = s;  // server -> worker
  return c;
}

// Each rank's S reaches the N - 1 others, and it receives theirs.
ByteCount ring_gather_bytes(double n, double s) {
  ByteCount c;
  c.sent = c.received = (n - 1.0) * s;
  return c;
}

ByteCount parameter_server_gather_bytes(double n, double s) {
  ByteCount c;
  c.sent = s;                  // once, to the relay
  c.received = (n - 1.0) * s;  // the others', from the relay
  return c;
}

}  // namespace

const std::vector<CollectiveAlgorithm>& collective_algorithms() {
  static const std::vector<CollectiveAlgorithm> table = {
      {CollectiveAlgo::Ring,
       "ring",
       {},
       "2(N-1) latencies, 2(N-1)/N of the payload each way",
       ring_seconds,
       ring_bytes,
       ring_gather_seconds,
       ring_gather_bytes},
      {CollectiveAlgo::Tree,
       "tree",
       {},
       "recursive halving/doubling: 2 lg N latencies (all-gather: lg N), the ring's bytes",
       tree_seconds,
       ring_bytes,
       tree_gather_seconds,
       ring_gather_bytes},
      {CollectiveAlgo::ParameterServer,
       "ps",
       {"parameter-server", "relay"},
       "a relay (parameter server or object store) each worker uploads its payload to once and downloads the "
       "result from; its link (network.server_bandwidth) carries N payloads each way",
       parameter_server_seconds,
       parameter_server_bytes,
       parameter_server_gather_seconds,
       parameter_server_gather_bytes},
  };
  return table;
}

const CollectiveAlgorithm& collective_algorithm(CollectiveAlgo algo) {
  for (const CollectiveAlgorithm& a : collective_algorithms())
    if (a.algo == algo) return a;
  // An enum value without a line is a mistake in the table (NetAlgorithms tests every value).
  throw std::logic_error("collective algorithm " + std::to_string(static_cast<int>(algo)) + " has no table line");
}

std::vector<std::string> collective_algorithm_spellings() {
  std::vector<std::string> out;
  for (const CollectiveAlgorithm& a : collective_algorithms()) {
    out.push_back(a.name);
    out.insert(out.end(), a.aliases.begin(), a.aliases.end());
  }
  return out;
}

std::string collective_algorithm_choices() {
  std::string out;
  for (const CollectiveAlgorithm& a : collective_algorithms()) {
    out += (out.empty() ? "" : " | ") + std::string(a.name);
    for (size_t i = 0; i < a.aliases.size(); ++i) out += (i == 0 ? " (or " : ", ") + a.aliases[i];
    if (!a.aliases.empty()) out += ")";
  }
  return out;
}

std::string collective_algorithm_help() {
  std::string out;
  for (const CollectiveAlgorithm& a : collective_algorithms())
    out += (out.empty() ? "" : "; ") + std::string(a.name) + ": " + a.help;
  return out;
}

}  // namespace atl
