// What one cross-island op costs one device on a two-level network
// (ALGORITHMS.md 7.2, "Islands (two-level network)").
//
// Symbols: I islands, P the participating islands (empty = all), p = |P|,
// D devices per island, S this device's payload, L the largest payload (it
// sets the op's time), beta/alpha the wide-area link's bandwidth/latency
// (the slowest / largest among P, as NetworkModel does), b_in/a_in those of
// the links inside an island, lg(D) = ceil(log2 D).
//
// R = bytes of the op's result every device ends up holding:
//   all-reduce, broadcast, exchange, send, recv: R = S
//     (send and recv are the two ends of one transfer: both are charged the
//     time of the receiving island's broadcast so both ends agree on it);
//   all-gather: R = S + others (the whole gathered result);
//   barrier: R = 0.
//
// Every intra-island term below is 0 when D = 1, so one device per island
// is exactly the flat NetworkModel (time, and bytes_for's bytes).
//
// flat (one op among p*D devices on the wide-area links; every hop may cross
// the WAN, so the slowest link decides):
//   seconds = wan op of payload L among n = p*D ranks
//     all-reduce ring: 2(pD-1)*alpha + 2(pD-1)/(pD) * L/beta
//   wide-area bytes per device = bytes_for(op, S, pD)
//     (all-gather: sent (pD-1)*S, received D*others + (D-1)*S); intra: none.
//
// leader (device 0 of each island runs the op for it):
//   pre  = all-reduce: lg(D)*a_in + S/b_in   (pipelined tree reduce to the leader)
//          barrier:    lg(D)*a_in            (every device checks in)
//          otherwise:  0                     (the leader already holds the payload)
//   cross = wan op of payload L among n = p leaders
//     all-reduce ring: 2(p-1)*alpha + 2(p-1)/p * L/beta
//   post = lg(D)*a_in + R/b_in               (pipelined tree broadcast of the result)
//          barrier: lg(D)*a_in
//   seconds = pre + cross + post
//   wide-area bytes: device 0 = bytes_for(op, S, p) (all-gather: sent (p-1)*S,
//   received others); devices 1..D-1: 0.
//   intra bytes, binary tree on devices 0..D-1 (parent of j is (j-1)/2, c(j)
//   children): reduce (all-reduce only): j != 0 sends S, j receives c(j)*S;
//   broadcast of R: j != 0 receives R, j sends c(j)*R. Per island: (D-1)*S
//   and (D-1)*R each way.
//
// sharded (device j carries slice j, 1/D of the payload, over its own
// wide-area link, with device j of the other islands):
//   pre  = all-reduce: (D-1)*a_in + (D-1)/D * S/b_in   (ring reduce-scatter); otherwise 0
//   cross = wan op of payload L/D among n = p islands
//     all-reduce ring: 2(p-1)*alpha + 2(p-1)/p * (L/D)/beta
//   post = (D-1)*a_in + (D-1)/D * R/b_in                (ring all-gather; barrier: R = 0)
//   seconds = pre + cross + post
//   wide-area bytes per device = bytes_for(op, S/D, p) (all-gather: sent
//   (p-1)*S/D, received others/D; broadcast: the root island's devices send
//   S/D each, the others receive S/D each).
//   intra bytes per device: reduce-scatter (all-reduce only) (D-1)/D*S each
//   way, all-gather (D-1)/D*R each way.
//
// All-reduce with the ring algorithm, p = I, S = L (the table's rows):
//   flat:    2(ID-1)alpha + 2(ID-1)/(ID) * S/beta
//   leader:  T + 2(I-1)alpha + 2(I-1)/I * S/beta + T,   T = lg(D)*a_in + S/b_in
//   sharded: 2[(D-1)a_in + (D-1)/D * S/b_in] + 2(I-1)alpha + 2(I-1)/I * (S/D)/beta
// The tree and ps algorithms change the wide-area op only.
//
// beta is what one device's wide-area link carries: flat and sharded keep
// all D links of an island busy at once, leader only the leader's. With a
// shared uplink (network.island_uplink = shared) the D devices of an island
// share one link of beta, so flat and sharded see beta / D per device
// (sharded's cross-island time then equals leader's).

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "atoll/net.h"
#include "net/rounds.h"

namespace atl {
namespace {

double result_bytes(CommOp op, double payload, double others) {
  switch (op) {
    case CommOp::AllGather:
      return payload + others;
    case CommOp::Barrier:
      return 0.0;
    case CommOp::AllReduce:
    case CommOp::Broadcast:
    case CommOp::Exchange:
    case CommOp::Send:
    case CommOp::Recv:
      return payload;
  }
  return payload;
}

// Children of node j in the binary tree on nodes 0..d-1 (children 2j+1, 2j+2).
double tree_children(int64_t j, int64_t d) {
  return static_cast<double>((2 * j + 1 < d ? 1 : 0) + (2 * j + 2 < d ? 1 : 0));
}

}  // namespace

IslandNetwork::IslandNetwork(NetworkModel wan, Link intra, int64_t devices, IslandExchange exchange, bool shared_uplink)
    : wan_(std::move(wan)),
      wan_per_device_(wan_),
      shared_uplink_(shared_uplink),
      intra_(intra),
      devices_(devices),
      exchange_(exchange) {
  if (devices_ < 1) {
    throw std::invalid_argument("islands.devices must be >= 1 device per island, got " + std::to_string(devices_));
  }
  if (!(intra_.bandwidth > 0) || !std::isfinite(intra_.bandwidth)) {
    throw std::invalid_argument("network.intra_bandwidth must be a finite rate > 0 bytes/s, got " +
                                std::to_string(intra_.bandwidth));
  }
  if (!(intra_.latency >= 0) || !std::isfinite(intra_.latency)) {
    throw std::invalid_argument("network.intra_latency must be a finite duration >= 0 s, got " +
                                std::to_string(intra_.latency));
  }
  // D devices on one uplink at once: each gets a D-th of it.
  if (shared_uplink_ && devices_ > 1) wan_per_device_ = wan_.with_bandwidth_scaled(1.0 / static_cast<double>(devices_));
}

OpCharge IslandNetwork::charge(CommOp op, double payload, double largest, double others, int64_t device, bool is_root,
                               const std::vector<int64_t>& participants, uint64_t op_index) const {
  if (device < 0 || device >= devices_) {
    throw std::out_of_range("IslandNetwork::charge: device " + std::to_string(device) + " outside 0.." +
                            std::to_string(devices_ - 1));
  }
  if (!(payload >= 0) || !(largest >= 0) || !(others >= 0)) {
    throw std::invalid_argument("IslandNetwork::charge: payload, largest and others must be >= 0 bytes");
  }
  std::vector<int64_t> all;
  if (participants.empty()) {
    all.resize(static_cast<std::size_t>(islands()));
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  }
  const std::vector<int64_t>& islands_in = participants.empty() ? all : participants;
  for (int64_t island : islands_in) {
    // Checked here too: the wide-area model skips its own check for a lone participant.
    if (island < 0 || island >= islands()) {
      throw std::out_of_range("IslandNetwork::charge: island " + std::to_string(island) + " outside 0.." +
                              std::to_string(islands() - 1));
    }
  }

  const int64_t p = static_cast<int64_t>(islands_in.size());
  const int64_t d = devices_;
  const double dd = static_cast<double>(d);
  const double s = payload;
  const double r = result_bytes(op, payload, others);
  const double a_in = intra_.latency;
  const double b_in = intra_.bandwidth;
  const CollectiveAlgo algo = wan_.algorithm();
  OpCharge c;

  switch (exchange_) {
    case IslandExchange::Flat: {
      const int64_t n = p * d;
      c.seconds = wan_per_device_.op_seconds_for(op, largest, islands_in, n, op_index);
      if (op == CommOp::AllGather) {
        // Each device's S reaches the n-1 others; it receives every other
        // island's payload from each of that island's D devices, and its own
        // island's payload from its D-1 neighbours.
        if (n > 1) {
          c.sent = bytes_for(op, algo, s, n, false).sent;  // (n - 1) S, or S once to a relay
          c.received = dd * others + (dd - 1.0) * s;
        }
      } else {
        const ByteCount b = bytes_for(op, algo, s, n, is_root);
        c.sent = b.sent;
        c.received = b.received;
      }
      break;
    }
    case IslandExchange::Leader: {
      double pre = 0, post = 0;
      if (d > 1) {
        const double rounds = static_cast<double>(ceil_log2(d));
        if (op == CommOp::AllReduce) pre = rounds * a_in + s / b_in;
        if (op == CommOp::Barrier) pre = rounds * a_in;
        post = op == CommOp::Barrier ? rounds * a_in : rounds * a_in + r / b_in;
      }
      const double cross = wan_.op_seconds_for(op, largest, islands_in, p, op_index);
      c.seconds = pre + cross + post;
      c.intra_seconds = pre + post;
      if (device == 0) {
        if (op == CommOp::AllGather) {
          if (p > 1) {
            c.sent = bytes_for(op, algo, s, p, false).sent;
            c.received = others;
          }
        } else {
          const ByteCount b = bytes_for(op, algo, s, p, is_root);
          c.sent = b.sent;
          c.received = b.received;
        }
      }
      const double children = tree_children(device, d);
      if (op == CommOp::AllReduce) {  // reduce up the tree
        if (device != 0) c.intra_sent += s;
        c.intra_received += children * s;
      }
      if (device != 0) c.intra_received += r;  // broadcast down the tree
      c.intra_sent += children * r;
      break;
    }
    case IslandExchange::Sharded: {
      double pre = 0, post = 0;
      const double share = (dd - 1.0) / dd;  // of a ring reduce-scatter / all-gather
      if (d > 1) {
        const double hops = dd - 1.0;
        if (op == CommOp::AllReduce) pre = hops * a_in + share * s / b_in;
        post = hops * a_in + share * r / b_in;
      }
      const double cross = wan_per_device_.op_seconds_for(op, largest / dd, islands_in, p, op_index);
      c.seconds = pre + cross + post;
      c.intra_seconds = pre + post;
      const double slice = s / dd;
      if (op == CommOp::AllGather) {
        if (p > 1) {
          c.sent = bytes_for(op, algo, slice, p, false).sent;
          c.received = others / dd;
        }
      } else {
        const ByteCount b = bytes_for(op, algo, slice, p, is_root);
        c.sent = b.sent;
        c.received = b.received;
      }
      if (d > 1) {
        if (op == CommOp::AllReduce) {
          c.intra_sent += share * s;
          c.intra_received += share * s;
        }
        c.intra_sent += share * r;
        c.intra_received += share * r;
      }
      break;
    }
  }
  return c;
}

}  // namespace atl
