// `atoll cost`: back-of-envelope cost of one sync and a whole run
// (ALGORITHMS.md 7.1 message sizes, 7.2 formulas, 7.3 blocking wall clock,
// 7.4 worked examples).

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "atoll/net.h"

namespace atl {
namespace {

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
std::string fmt(const char* format, ...) {
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

bool is_periodic(const std::string& strategy) {
  return strategy == "localsgd" || strategy == "diloco";
}

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
  if (q.steps < 0) problems.push_back("steps must be >= 0");
  if (!(q.step_seconds >= 0) || !std::isfinite(q.step_seconds)) {
    problems.push_back("step time must be >= 0 s");
  }
  if (q.strategy != "ddp" && q.strategy != "sparta" && !is_periodic(q.strategy)) {
    problems.push_back("unknown strategy '" + q.strategy +
                       "'; expected one of ddp|localsgd|diloco|sparta");
  }
  if (is_periodic(q.strategy) && q.inner_steps < 1) {
    problems.push_back("inner steps H must be >= 1");
  }
  if (q.strategy == "sparta" && !(q.sparta_p > 0 && q.sparta_p <= 1)) {
    problems.push_back("sparta p must be in (0, 1]");
  }
  if (problems.empty()) return;
  std::string msg = "cost:";
  for (const auto& p : problems) msg += " " + p + ";";
  msg.pop_back();
  throw std::invalid_argument(msg);
}

}  // namespace

CostReport estimate_cost(const CostQuery& q) {
  check_query(q);
  CostReport r;
  const double model_bytes = q.params * q.bytes_per_element;
  r.one_copy_seconds = model_bytes / q.bandwidth;

  // ALGORITHMS.md 7.1: DDP sends gradients every step; Local SGD and DiLoCo
  // send P values every H steps; SPARTA sends p*P values every step.
  if (q.strategy == "sparta") {
    r.sync_payload_bytes = q.sparta_p * model_bytes;
    r.syncs = static_cast<double>(q.steps);
  } else if (is_periodic(q.strategy)) {
    r.sync_payload_bytes = model_bytes;
    r.syncs = static_cast<double>(q.steps / q.inner_steps);  // floor: only completed rounds
  } else {
    r.sync_payload_bytes = model_bytes;
    r.syncs = static_cast<double>(q.steps);
  }

  r.sync_bytes_sent =
      bytes_for(CommOp::AllReduce, q.algo, r.sync_payload_bytes, q.workers, false).sent;
  const std::vector<Link> links(static_cast<std::size_t>(q.workers), Link{q.bandwidth, q.latency});
  const NetworkModel net(links, q.algo, q.bandwidth, 0.0, 0);
  r.sync_seconds = net.collective_seconds(CommOp::AllReduce, r.sync_payload_bytes, 0);

  r.run_bytes_sent = r.syncs * r.sync_bytes_sent;
  r.run_comm_seconds = r.syncs * r.sync_seconds;
  const double compute = static_cast<double>(q.steps) * q.step_seconds;
  r.run_total_seconds = compute + r.run_comm_seconds;  // blocking: no overlap (7.3)
  r.compute_utilisation = r.run_total_seconds > 0 ? compute / r.run_total_seconds : 1.0;
  return r;
}

std::string format_cost(const CostQuery& q, const CostReport& r) {
  std::string strategy = q.strategy;
  if (is_periodic(q.strategy)) {
    strategy += fmt(" (H=%lld)", static_cast<long long>(q.inner_steps));
  } else if (q.strategy == "sparta") {
    strategy += fmt(" (p=%g)", q.sparta_p);
  } else {
    strategy += " (every step)";
  }
  const std::string algo = to_string(q.algo) + " all-reduce";
  const double compute = static_cast<double>(q.steps) * q.step_seconds;

  std::string out;
  out += "inputs: " + format_count(q.params) + " parameters x " +
         fmt("%g", q.bytes_per_element) + " bytes/element, " +
         fmt("%lld", static_cast<long long>(q.workers)) + " workers, " +
         format_bandwidth(q.bandwidth) + fmt(" per link, latency %g ms, ", q.latency * 1e3) + algo +
         ", strategy " + strategy + fmt(", %lld steps", static_cast<long long>(q.steps)) + " x " +
         format_seconds(q.step_seconds) + " compute\n";
  out += "one copy through one link: " + format_seconds(r.one_copy_seconds) + ", " +
         format_bytes(q.params * q.bytes_per_element) + "\n";
  out += "one sync (" + algo + fmt(", N=%lld): ", static_cast<long long>(q.workers)) +
         format_seconds(r.sync_seconds) + ", payload " + format_bytes(r.sync_payload_bytes) +
         ", sent per worker " + format_bytes(r.sync_bytes_sent) + "\n";
  out += fmt("syncs in run: %.0f\n", r.syncs);
  out += "sent per worker in run: " + format_bytes(r.run_bytes_sent) + "\n";
  out += "communication time in run: " + format_seconds(r.run_comm_seconds) + "\n";
  out += "total time: " + format_seconds(r.run_total_seconds) + " = compute " +
         format_seconds(compute) + " + blocking communication " +
         format_seconds(r.run_comm_seconds) + "\n";
  out += fmt("compute utilisation: %.1f%%\n", r.compute_utilisation * 100);
  return out;
}

}  // namespace atl
