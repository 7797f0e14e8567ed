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

// Every worker sends S up and gets S back; the server's link carries N * S each way.
double parameter_server_seconds(const AllReduceShape& a) {
  const double server = a.server_bandwidth > 0 ? a.server_bandwidth : a.beta;
  return 2.0 * a.alpha + 2.0 * std::max(a.payload / a.beta, static_cast<double>(a.n) * a.payload / server);
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

}  // namespace

const std::vector<CollectiveAlgorithm>& collective_algorithms() {
  static const std::vector<CollectiveAlgorithm> table = {
      {CollectiveAlgo::Ring,
       "ring",
       {},
       "2(N-1) latencies, 2(N-1)/N of the payload each way",
       ring_seconds,
       ring_bytes},
      {CollectiveAlgo::Tree,
       "tree",
       {},
       "recursive halving/doubling: 2 lg N latencies, the ring's bytes",
       tree_seconds,
       ring_bytes},
      {CollectiveAlgo::ParameterServer,
       "ps",
       {"parameter-server"},
       "through one server whose link carries N payloads (network.server_bandwidth)",
       parameter_server_seconds,
       parameter_server_bytes},
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
