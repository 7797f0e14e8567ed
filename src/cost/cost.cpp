// `atoll cost`: back-of-envelope cost of one sync and a whole run
// (ALGORITHMS.md 7.1 message sizes, 7.2 formulas, 7.3 blocking wall clock,
// 7.4 worked examples).

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/cost.h"
#include "atoll/net.h"
#include "compress/codec_names.h"
#include "net/collective_algorithms.h"
#include "net/island_exchanges.h"

namespace atl {
namespace {

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
std::string
fmt(const char* format, ...) {
  char buf[256];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

// "1120 s (18.7 min)", "0.42 s", "7200 s (2 h)".
std::string format_seconds(double s) {
  std::string out = s < 100 ? fmt("%.3g s", s) : fmt("%.0f s", s);
  if (s >= 2 * 86400.0) {
    out += fmt(" (%.3g days)", s / 86400.0);
  } else if (s >= 2 * 3600.0) {
    out += fmt(" (%.3g h)", s / 3600.0);
  } else if (s >= 60) {
    out += fmt(" (%.3g min)", s / 60.0);
  }
  return out;
}

// Decimal units: "24.5 GB".
std::string format_bytes(double b) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (b >= 1000 && u < 6) {
    b /= 1000;
    ++u;
  }
  return fmt("%.3g %s", b, units[u]);
}

// "7B", "124M", "1.5k".
std::string format_count(double n) {
  if (n >= 1e12) return fmt("%.3gT", n / 1e12);
  if (n >= 1e9) return fmt("%.3gB", n / 1e9);
  if (n >= 1e6) return fmt("%.3gM", n / 1e6);
  if (n >= 1e3) return fmt("%.3gk", n / 1e3);
  return fmt("%.3g", n);
}

std::string format_bandwidth(double bytes_per_second) {
  const double bits = bytes_per_second * 8;
  if (bits >= 1e9) return fmt("%.3g Gbit/s", bits / 1e9);
  return fmt("%.3g Mbit/s", bits / 1e6);
}

// "100 Mbit/s", or "110 Mbit/s up / 500 Mbit/s down" for an asymmetric link.
std::string link_text(const CostQuery& q) {
  if (q.download <= 0 || q.download == q.bandwidth) return format_bandwidth(q.bandwidth);
  return format_bandwidth(q.bandwidth) + " up / " + format_bandwidth(q.download) + " down";
}

// Rows of cells as left-aligned columns, two spaces apart, indented by two.
std::string format_table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line = " ";
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += " " + row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 1, ' ');
    }
    out += line + "\n";
  }
  return out;
}

bool is_periodic(const std::string& strategy) { return strategy == "localsgd" || strategy == "diloco"; }

void check_query(const CostQuery& q) {
  std::vector<std::string> problems;
  if (!(q.params >= 0) || !std::isfinite(q.params)) problems.push_back("params must be >= 0");
  if (!(q.bytes_per_element > 0) || !std::isfinite(q.bytes_per_element)) {
    problems.push_back("bytes per element must be > 0");
  }
  if (q.workers < 1) problems.push_back("workers must be >= 1");
  if (!(q.bandwidth > 0) || !std::isfinite(q.bandwidth)) {
    problems.push_back("bandwidth must be > 0 bytes/s");
  }
  if (!(q.latency >= 0) || !std::isfinite(q.latency)) problems.push_back("latency must be >= 0 s");
  if (!(q.download >= 0) || !std::isfinite(q.download)) {
    problems.push_back("download bandwidth must be > 0 bytes/s (0 = the upload's)");
  }
  if (!(q.server_bandwidth >= 0) || !std::isfinite(q.server_bandwidth)) {
    problems.push_back("relay bandwidth must be > 0 bytes/s (0 = the workers' upload)");
  }
  if (q.steps < 0) problems.push_back("steps must be >= 0");
  if (!(q.step_seconds >= 0) || !std::isfinite(q.step_seconds)) {
    problems.push_back("step time must be >= 0 s");
  }
  if (q.strategy != "ddp" && q.strategy != "sparta" && !is_periodic(q.strategy)) {
    problems.push_back("unknown strategy '" + q.strategy + "'; expected one of ddp|localsgd|diloco|sparta");
  }
  if (is_periodic(q.strategy) && q.inner_steps < 1) {
    problems.push_back("inner steps H must be >= 1");
  }
  if (q.strategy == "sparta" && !(q.sparta_p > 0 && q.sparta_p <= 1)) {
    problems.push_back("sparta p must be in (0, 1]");
  }
  // A bound so that a typo cannot ask for a loop over 10^12 devices.
  constexpr int64_t kMaxIslandsOrDevices = 1000000;
  if (q.islands < 0 || q.islands > kMaxIslandsOrDevices) {
    problems.push_back("islands must be in 0..1000000 (0 = no islands), got " + std::to_string(q.islands));
  }
  if (q.devices < 1 || q.devices > kMaxIslandsOrDevices) {
    problems.push_back("devices must be in 1..1000000 per island, got " + std::to_string(q.devices));
  } else if (q.islands == 0 && q.devices != 1) {
    problems.push_back("devices per island needs islands >= 1");
  }
  if (!(q.intra_bandwidth > 0) || !std::isfinite(q.intra_bandwidth)) {
    problems.push_back("intra-island bandwidth must be > 0 bytes/s");
  }
  if (!(q.intra_latency >= 0) || !std::isfinite(q.intra_latency)) {
    problems.push_back("intra-island latency must be >= 0 s");
  }
  std::vector<std::string> exchanges = island_exchange_names();
  exchanges.push_back("all");
  if (std::find(exchanges.begin(), exchanges.end(), q.exchange) == exchanges.end()) {
    std::string choices;
    for (const std::string& x : exchanges) choices += (choices.empty() ? "" : "|") + x;
    problems.push_back("unknown exchange '" + q.exchange + "'; expected one of " + choices);
  }
  if (!q.codec.empty()) {
    if (!find_codec(q.codec)) {
      problems.push_back("unknown codec '" + q.codec + "'; expected one of " + codec_choices());
    } else if (q.params > 1e18) {  // counted in int64 elements
      problems.push_back("params must be <= 1e18 with a codec");
    } else {
      std::vector<std::string> codec_problems;
      validate_codec_section(q.codec_settings, codec_problems);
      problems.insert(problems.end(), codec_problems.begin(), codec_problems.end());
    }
  }
  if (problems.empty()) return;
  std::string msg = "cost:";
  for (const auto& p : problems) msg += " " + p + ";";
  msg.pop_back();
  throw std::invalid_argument(msg);
}

// Bytes of a payload of `elements` values: the codec's exact encoded size
// (values, block scales, indices), or bytes_per_element each.
double payload_bytes(const CostQuery& q, double elements) {
  if (q.codec.empty()) return elements * q.bytes_per_element;
  CodecSizing sizing;
  sizing.block = q.codec_settings.block;
  sizing.topk_density = q.codec_settings.topk_density;
  sizing.chunk = q.codec_settings.chunk;
  sizing.chunk_topk = q.codec_settings.chunk_topk;
  return codec_encoded_bytes(q.codec, static_cast<int64_t>(std::llround(elements)), sizing);
}

// How a sync's payload travels: a sparse codec's payloads hold different
// positions per worker, so they are all-gathered (compress/payload.h).
CommOp sync_op(const CostQuery& q) {
  return !q.codec.empty() && codec_is_sparse(q.codec) ? CommOp::AllGather : CommOp::AllReduce;
}

// One sync (`op` of `payload` bytes per device) on `net`, and `syncs` of
// them in a run with `compute` seconds of compute.
IslandCostRow island_row(const std::string& name, const IslandNetwork& net, CommOp op, double payload, double syncs,
                         double compute) {
  IslandCostRow row;
  row.name = name;
  // All-gather: every other island's payload reaches this one.
  const double others = op == CommOp::AllGather ? static_cast<double>(net.islands() - 1) * payload : 0.0;
  for (int64_t d = 0; d < net.devices(); ++d) {
    const OpCharge c = net.charge(op, payload, payload, others, d, false, {}, 0);
    row.sync_seconds = c.seconds;  // the same for every device
    row.sync_intra_seconds = c.intra_seconds;
    row.wan_bytes_per_island += c.sent;
    row.wan_bytes_busiest_link = std::max(row.wan_bytes_busiest_link, c.sent);
    row.intra_bytes_per_island += c.intra_sent;
  }
  row.syncs = syncs;
  row.run_wan_bytes_per_island = syncs * row.wan_bytes_per_island;
  row.run_comm_seconds = syncs * row.sync_seconds;
  row.run_total_seconds = compute + row.run_comm_seconds;  // blocking: no overlap (7.3)
  row.compute_utilisation = row.run_total_seconds > 0 ? compute / row.run_total_seconds : 1.0;
  return row;
}

// n identical links of the query's upload, download and latency, with the
// relay's bandwidth.
NetworkModel flat_network(const CostQuery& q, int64_t n, CollectiveAlgo algo) {
  const std::vector<Link> links(static_cast<std::size_t>(n), Link{q.bandwidth, q.latency, q.download});
  return NetworkModel(links, algo, q.server_bandwidth > 0 ? q.server_bandwidth : q.bandwidth, 0.0, 0);
}

// The islands' part of estimate_cost: each exchange for one sync of the
// strategy, DDP every step for comparison, and the report's flat fields.
void estimate_islands(const CostQuery& q, double model_bytes, double compute, CostReport& r) {
  const NetworkModel wan = flat_network(q, q.islands, q.algo);
  const Link intra{q.intra_bandwidth, q.intra_latency};
  const CommOp op = sync_op(q);
  for (const IslandExchangeInfo& ex : island_exchanges()) {
    const IslandNetwork net(wan, intra, q.devices, ex.exchange, q.shared_uplink);
    IslandCostRow row = island_row(ex.name, net, op, r.sync_payload_bytes, r.syncs, compute);
    row.chosen = q.exchange == "all" || q.exchange == row.name;
    r.exchanges.push_back(row);
  }
  // DDP: the gradient (P*b bytes) every step, one ring over all I*D devices.
  const IslandNetwork flat(wan, intra, q.devices, IslandExchange::Flat, q.shared_uplink);
  r.ddp = island_row("ddp", flat, op, model_bytes, static_cast<double>(q.steps), compute);
  // The flat exchange (the table's first) is the single-level figure for N = I*D workers.
  const IslandCostRow& f = r.exchanges.front();
  r.sync_bytes_sent = f.wan_bytes_per_island / static_cast<double>(q.devices);
  r.sync_seconds = f.sync_seconds;
  // Every strategy but DDP also averages gradients inside each island every
  // inner step (ALGORITHMS.md 7.2: a ring over D on the intra links).
  if (q.strategy != "ddp" && q.devices > 1) {
    const NetworkModel inside(std::vector<Link>(static_cast<std::size_t>(q.devices), intra), CollectiveAlgo::Ring,
                              q.intra_bandwidth, 0.0, 0);
    r.island_ddp_step_seconds = inside.collective_seconds(CommOp::AllReduce, model_bytes, 0);
  }
}

}  // namespace

std::string cost_codec_choices() { return codec_choices(); }

CostReport estimate_cost(const CostQuery& q) {
  check_query(q);
  CostReport r;
  const double model_bytes = payload_bytes(q, q.params);
  r.model_bytes = model_bytes;
  r.one_copy_seconds = model_bytes / q.bandwidth;

  // ALGORITHMS.md 7.1: DDP sends gradients every step; Local SGD and DiLoCo
  // send P values every H steps; SPARTA sends p*P values every step.
  if (q.strategy == "sparta") {
    r.sync_payload_bytes = q.codec.empty() ? q.sparta_p * model_bytes : payload_bytes(q, q.sparta_p * q.params);
    r.syncs = static_cast<double>(q.steps);
  } else if (is_periodic(q.strategy)) {
    r.sync_payload_bytes = model_bytes;
    r.syncs = static_cast<double>(q.steps / q.inner_steps);  // floor: only completed rounds
  } else {
    r.sync_payload_bytes = model_bytes;
    r.syncs = static_cast<double>(q.steps);
  }

  const double compute = static_cast<double>(q.steps) * q.step_seconds;
  if (q.islands > 0) {
    estimate_islands(q, model_bytes, compute, r);
  } else {
    const CommOp op = sync_op(q);
    for (const CollectiveAlgorithm& a : collective_algorithms()) {
      AlgorithmCostRow row;
      row.name = a.name;
      row.chosen = a.algo == q.algo;
      const ByteCount b = bytes_for(op, a.algo, r.sync_payload_bytes, q.workers, false);
      row.sent = b.sent;
      row.received = b.received;
      row.sync_seconds = flat_network(q, q.workers, a.algo).collective_seconds(op, r.sync_payload_bytes, 0);
      if (row.chosen) {
        r.sync_bytes_sent = row.sent;
        r.sync_seconds = row.sync_seconds;
      }
      r.algorithms.push_back(row);
    }
  }

  r.run_bytes_sent = r.syncs * r.sync_bytes_sent;
  r.run_comm_seconds = r.syncs * r.sync_seconds;
  r.run_total_seconds = compute + r.run_comm_seconds;  // blocking: no overlap (7.3)
  r.compute_utilisation = r.run_total_seconds > 0 ? compute / r.run_total_seconds : 1.0;
  return r;
}

namespace {

// "7B parameters x 2 bytes/element", or with a codec
// "7B parameters as int8 (1.031 bytes/element)".
std::string values_text(const CostQuery& q, const CostReport& r) {
  if (q.codec.empty()) {
    return format_count(q.params) + " parameters x " + fmt("%g", q.bytes_per_element) + " bytes/element";
  }
  const double per_value = q.params > 0 ? r.model_bytes / q.params : 0.0;
  return format_count(q.params) + " parameters as " + q.codec + fmt(" (%.4g bytes/element)", per_value);
}

// "ring all-reduce", or "all-gather" for a sparse codec's payloads.
std::string sync_text(const CostQuery& q) {
  return sync_op(q) == CommOp::AllGather ? std::string("all-gather") : to_string(q.algo) + " all-reduce";
}

// How `exchange` moves a sync among I islands of D devices (n = I*D).
std::string exchange_note(IslandExchange exchange, long long islands, long long devices, long long n) {
  switch (exchange) {
    case IslandExchange::Flat:
      return fmt("one ring over all %lld devices, every hop on the wide-area links", n);
    case IslandExchange::Leader:
      return fmt("reduce to device 0 (tree), the %lld leaders all-reduce, broadcast in the island (tree)", islands);
    case IslandExchange::Sharded:
      return fmt(
          "reduce-scatter in the island, each device all-reduces 1/%lld over its own wide-area link, "
          "all-gather in the island",
          devices);
  }
  return to_string(exchange);
}

// format_cost with islands: one sync under each exchange next to DDP over
// all I*D devices, then the run under the chosen exchanges.
std::string format_island_cost(const CostQuery& q, const CostReport& r, const std::string& strategy) {
  const long long islands = q.islands, devices = q.devices, n = q.islands * q.devices;
  const std::string algo = sync_text(q);
  std::string out;
  out += "inputs: " + values_text(q, r) + ", strategy " + strategy +
         fmt(", %lld steps", static_cast<long long>(q.steps)) + " x " + format_seconds(q.step_seconds) + " compute\n";
  out += fmt("network: %lld island%s x %lld device%s = %lld device%s; wide-area ", islands, islands == 1 ? "" : "s",
             devices, devices == 1 ? "" : "s", n, n == 1 ? "" : "s") +
         link_text(q) +
         (q.shared_uplink ? std::string(" per island, shared by its devices") : std::string(" per device link")) +
         fmt(", latency %g ms, ", q.latency * 1e3) + algo + "; inside an island " +
         format_bandwidth(q.intra_bandwidth) + fmt(" per link, latency %g ms\n", q.intra_latency * 1e3);
  out += "one copy through one wide-area link: " + format_seconds(r.one_copy_seconds) + ", " +
         format_bytes(r.model_bytes) + "\n";

  out += "one sync (" + algo + " of " + format_bytes(r.sync_payload_bytes) +
         fmt(" per device across the %lld islands; ddp: of the ", islands) + format_bytes(r.model_bytes) +
         fmt(" gradient over all %lld devices):\n", n);
  std::vector<std::vector<std::string>> rows = {
      {"exchange", "one sync", "in island", "WAN sent per island", "busiest WAN link", "sent in island"}};
  auto sync_cells = [](const std::string& label, const IslandCostRow& row) {
    return std::vector<std::string>{label,
                                    format_seconds(row.sync_seconds),
                                    format_seconds(row.sync_intra_seconds),
                                    format_bytes(row.wan_bytes_per_island),
                                    format_bytes(row.wan_bytes_busiest_link),
                                    format_bytes(row.intra_bytes_per_island)};
  };
  for (const IslandCostRow& row : r.exchanges) rows.push_back(sync_cells(row.name, row));
  rows.push_back(sync_cells("ddp (flat, every step)", r.ddp));
  out += format_table(rows);
  for (const IslandExchangeInfo& ex : island_exchanges())
    out += "  " + std::string(ex.name) + ": " + exchange_note(ex.exchange, islands, devices, n) + "\n";

  out += fmt("syncs in run: %.0f (ddp: %.0f)\n", r.syncs, r.ddp.syncs);
  out += "run, communication blocking compute:\n";
  rows = {{"exchange", "syncs", "WAN sent per island", "communication", "total time", "compute utilisation"}};
  auto run_cells = [](const std::string& label, const IslandCostRow& row) {
    return std::vector<std::string>{label,
                                    fmt("%.0f", row.syncs),
                                    format_bytes(row.run_wan_bytes_per_island),
                                    format_seconds(row.run_comm_seconds),
                                    format_seconds(row.run_total_seconds),
                                    fmt("%.1f%%", row.compute_utilisation * 100)};
  };
  for (const IslandCostRow& row : r.exchanges) {
    if (row.chosen) rows.push_back(run_cells(row.name, row));
  }
  rows.push_back(run_cells("ddp (flat, every step)", r.ddp));
  out += format_table(rows);
  if (r.island_ddp_step_seconds > 0) {
    out += fmt("inside each island every step: DDP over %lld devices on the intra links, ", devices) +
           format_seconds(r.island_ddp_step_seconds) + " per step, " +
           format_seconds(r.island_ddp_step_seconds * static_cast<double>(q.steps)) +
           " in the run (not in the totals above)\n";
  }
  return out;
}

}  // namespace

std::string format_cost(const CostQuery& q, const CostReport& r) {
  std::string strategy = q.strategy;
  if (is_periodic(q.strategy)) {
    strategy += fmt(" (H=%lld)", static_cast<long long>(q.inner_steps));
  } else if (q.strategy == "sparta") {
    strategy += fmt(" (p=%g)", q.sparta_p);
  } else {
    strategy += " (every step)";
  }
  if (q.islands > 0) return format_island_cost(q, r, strategy);
  const std::string algo = sync_text(q);
  const double compute = static_cast<double>(q.steps) * q.step_seconds;

  std::string out;
  out += "inputs: " + values_text(q, r) + ", " + fmt("%lld", static_cast<long long>(q.workers)) + " workers, " +
         link_text(q) + fmt(" per link, latency %g ms, ", q.latency * 1e3) + algo + ", strategy " + strategy +
         fmt(", %lld steps", static_cast<long long>(q.steps)) + " x " + format_seconds(q.step_seconds) + " compute\n";
  out += "one copy through one link: " + format_seconds(r.one_copy_seconds) + ", " + format_bytes(r.model_bytes) + "\n";
  out += "one sync (" + algo + fmt(", N=%lld): ", static_cast<long long>(q.workers)) + format_seconds(r.sync_seconds) +
         ", payload " + format_bytes(r.sync_payload_bytes) + ", sent per worker " + format_bytes(r.sync_bytes_sent) +
         "\n";
  out += "the same sync under each algorithm (the relay's link: " +
         format_bandwidth(q.server_bandwidth > 0 ? q.server_bandwidth : q.bandwidth) + " each way):\n";
  std::vector<std::vector<std::string>> rows = {{"algorithm", "one sync", "sent per worker", "received per worker"}};
  for (const AlgorithmCostRow& a : r.algorithms)
    rows.push_back({(a.name == "ps" ? "ps (relay)" : a.name) + std::string(a.chosen ? ", chosen" : ""),
                    format_seconds(a.sync_seconds), format_bytes(a.sent), format_bytes(a.received)});
  out += format_table(rows);
  out += fmt("syncs in run: %.0f\n", r.syncs);
  out += "sent per worker in run: " + format_bytes(r.run_bytes_sent) + "\n";
  out += "communication time in run: " + format_seconds(r.run_comm_seconds) + "\n";
  out += "total time: " + format_seconds(r.run_total_seconds) + " = compute " + format_seconds(compute) +
         " + blocking communication " + format_seconds(r.run_comm_seconds) + "\n";
  out += fmt("compute utilisation: %.1f%%\n", r.compute_utilisation * 100);
  return out;
}

}  // namespace atl
