// Text -> numbers for the network model: bandwidths, durations, comma lists,
// algorithm names, and NetworkModel::from_config which combines them.
//
// Numbers are scanned by hand (digits, optional '.', optional exponent) and
// converted with the classic locale, so "0x10", "inf" and "nan" are rejected
// and a process locale with a decimal comma changes nothing.

#include <algorithm>
#include <cmath>
#include <locale>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "atoll/net.h"
#include "net/collective_algorithms.h"
#include "util/format.h"

namespace atl {
namespace {

// Splits on ',' keeping empty entries ("1,,2" -> {"1", "", "2"}); entries trimmed.
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  if (trim(text).empty()) return out;
  std::string::size_type start = 0;
  while (true) {
    const auto comma = text.find(',', start);
    if (comma == std::string::npos) {
      out.push_back(trim(text.substr(start)));
      break;
    }
    out.push_back(trim(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Scans a decimal number at the start of `s` ([+-]digits[.digits][e[+-]digits]).
// On success stores the value and the rest of the string (leading spaces
// removed) and returns true.
bool scan_number(const std::string& s, double& value, std::string& rest) {
  std::string::size_type i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::string::size_type digits = 0;
  while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    auto j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    if (j < s.size() && is_digit(s[j])) {
      while (j < s.size() && is_digit(s[j])) ++j;
      i = j;
    }
  }
  std::istringstream in(s.substr(0, i));
  in.imbue(std::locale::classic());
  double v = 0;
  in >> v;
  if (in.fail() || !std::isfinite(v)) return false;
  value = v;
  rest = trim(s.substr(i));
  return true;
}

const char* const kBandwidthHelp = "expected a number with a unit like 100Mbit/s, 1Gbit/s, 25GB/s";
const char* const kDurationHelp = "expected a number with a unit like 30ms, 0.5s, 250us (units s, ms, us, ns, min)";

[[noreturn]] void bad_bandwidth(const std::string& text, const std::string& why) {
  throw std::invalid_argument("bandwidth '" + text + "': " + why);
}

[[noreturn]] void bad_duration(const std::string& text, const std::string& why) {
  throw std::invalid_argument("duration '" + text + "': " + why);
}

// Bits or bytes per second for a bandwidth unit; 0 if not a unit.
double bandwidth_unit_bytes(const std::string& unit) {
  if (unit.empty()) return 1.0;  // a bare number is bytes/s
  double scale = 1.0;
  std::string base = unit;
  switch (unit[0]) {
    case 'k':
    case 'K':
      scale = 1e3;
      break;
    case 'M':
      scale = 1e6;
      break;
    case 'G':
      scale = 1e9;
      break;
    case 'T':
      scale = 1e12;
      break;
    default:
      break;
  }
  if (scale != 1.0) base = unit.substr(1);
  if (base == "bit/s" || base == "bps" || base == "b/s") return scale / 8.0;
  if (base == "B/s" || base == "Bps") return scale;
  return 0.0;
}

// Seconds per duration unit; 0 if not a unit.
double duration_unit_seconds(const std::string& unit) {
  if (unit.empty() || unit == "s") return 1.0;
  if (unit == "ms") return 1e-3;
  // "µs" as MICRO SIGN (U+00B5) or GREEK SMALL LETTER MU (U+03BC), UTF-8.
  if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") return 1e-6;
  if (unit == "ns") return 1e-9;
  if (unit == "min") return 60.0;
  return 0.0;
}

// Rethrows a parse error with the config key in front.
template <typename Fn>
auto with_key(const std::string& key, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(key + ": " + e.what());
  }
}

}  // namespace

double parse_bandwidth(const std::string& text) {
  double value = 0;
  std::string unit;
  if (!scan_number(trim(text), value, unit)) bad_bandwidth(text, kBandwidthHelp);
  const double scale = bandwidth_unit_bytes(unit);
  if (scale == 0.0) bad_bandwidth(text, kBandwidthHelp);
  const double bytes = value * scale;
  if (!(bytes > 0) || !std::isfinite(bytes)) {
    bad_bandwidth(text, std::string("must be greater than 0; ") + kBandwidthHelp);
  }
  return bytes;
}

double parse_duration(const std::string& text) {
  double value = 0;
  std::string unit;
  if (!scan_number(trim(text), value, unit)) bad_duration(text, kDurationHelp);
  const double scale = duration_unit_seconds(unit);
  if (scale == 0.0) bad_duration(text, kDurationHelp);
  const double seconds = value * scale;
  if (!(seconds >= 0) || !std::isfinite(seconds)) {
    bad_duration(text, std::string("must not be negative; ") + kDurationHelp);
  }
  return seconds == 0 ? 0.0 : seconds;  // "-0" -> 0
}

std::vector<double> parse_number_list(const std::string& text, double fallback) {
  std::vector<double> out;
  const auto entries = split_commas(text);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].empty()) {
      out.push_back(fallback);
      continue;
    }
    double value = 0;
    std::string rest;
    if (!scan_number(entries[i], value, rest) || !rest.empty()) {
      throw std::invalid_argument("number list '" + text + "': entry " + std::to_string(i + 1) + " '" + entries[i] +
                                  "' is not a number; expected e.g. 1,,0.5 (empty = default)");
    }
    out.push_back(value);
  }
  return out;
}

CollectiveAlgo parse_algorithm(const std::string& name) {
  for (const CollectiveAlgorithm& a : collective_algorithms()) {
    if (name == a.name) return a.algo;
    for (const std::string& alias : a.aliases)
      if (name == alias) return a.algo;
  }
  throw std::invalid_argument("all-reduce algorithm '" + name + "': expected one of " + collective_algorithm_choices());
}

std::string to_string(CommOp op) {
  switch (op) {
    case CommOp::AllReduce:
      return "all_reduce";
    case CommOp::AllGather:
      return "all_gather";
    case CommOp::Broadcast:
      return "broadcast";
    case CommOp::Barrier:
      return "barrier";
    case CommOp::Exchange:
      return "exchange";
    case CommOp::Send:
      return "send";
    case CommOp::Recv:
      return "recv";
  }
  return "unknown";
}

std::string to_string(CollectiveAlgo algo) { return collective_algorithm(algo).name; }

NetworkModel NetworkModel::from_config(const NetworkConfig& cfg, int64_t workers, uint64_t seed) {
  if (workers < 1) {
    throw std::invalid_argument("network: need at least 1 worker, got " + std::to_string(workers));
  }
  Link base;
  base.bandwidth = with_key("network.bandwidth", [&] { return parse_bandwidth(cfg.bandwidth); });
  base.latency = with_key("network.latency", [&] { return parse_duration(cfg.latency); });
  std::vector<Link> links(static_cast<std::size_t>(workers), base);

  auto check_length = [&](const std::string& key, std::size_t n) {
    if (static_cast<int64_t>(n) > workers) {
      throw std::invalid_argument(key + ": " + std::to_string(n) + " entries for " + std::to_string(workers) +
                                  " workers; give at most one per worker (empty = default)");
    }
  };
  const auto bw = split_commas(cfg.worker_bandwidth);
  check_length("network.worker_bandwidth", bw.size());
  for (std::size_t i = 0; i < bw.size(); ++i) {
    if (bw[i].empty()) continue;
    links[i].bandwidth = with_key("network.worker_bandwidth", [&] { return parse_bandwidth(bw[i]); });
  }
  // Downloads: the per-worker entry, else network.download_bandwidth, else
  // the link's upload (0 in Link).
  if (!trim(cfg.download_bandwidth).empty()) {
    const double down = with_key("network.download_bandwidth", [&] { return parse_bandwidth(cfg.download_bandwidth); });
    for (Link& l : links) l.download = down;
  }
  const auto down = split_commas(cfg.worker_download_bandwidth);
  check_length("network.worker_download_bandwidth", down.size());
  for (std::size_t i = 0; i < down.size(); ++i) {
    if (down[i].empty()) continue;
    links[i].download = with_key("network.worker_download_bandwidth", [&] { return parse_bandwidth(down[i]); });
  }
  const auto lat = split_commas(cfg.worker_latency);
  check_length("network.worker_latency", lat.size());
  for (std::size_t i = 0; i < lat.size(); ++i) {
    if (lat[i].empty()) continue;
    links[i].latency = with_key("network.worker_latency", [&] { return parse_duration(lat[i]); });
  }

  const double server = trim(cfg.server_bandwidth).empty() ? base.bandwidth : with_key("network.server_bandwidth", [&] {
    return parse_bandwidth(cfg.server_bandwidth);
  });
  const CollectiveAlgo algo = with_key("network.algorithm", [&] { return parse_algorithm(cfg.algorithm); });
  const double jitter = with_key("network.jitter", [&] { return parse_duration(cfg.jitter); });
  NetworkModel model(std::move(links), algo, server, jitter, seed);
  model.outages_ = parse_outages(cfg.outages, workers);
  return model;
}

std::vector<Outage> parse_outages(const std::string& text, int64_t workers) {
  const std::string form =
      "network.outages = '" + text + "': expected a comma list of 'worker@from-to' in simulated time, e.g. '1@30s-60s'";
  std::vector<Outage> out;
  for (const std::string& item : split_commas(text)) {
    if (item.empty()) continue;
    const auto at = item.find('@'), dash = item.find('-', at == std::string::npos ? 0 : at);
    if (at == std::string::npos || dash == std::string::npos) throw std::invalid_argument(form);
    Outage o;
    try {
      const std::string w = trim(item.substr(0, at));
      std::size_t used = 0;
      o.worker = std::stoll(w, &used);
      if (used != w.size() || w.empty()) throw std::invalid_argument(form);
      o.from = parse_duration(item.substr(at + 1, dash - at - 1));
      o.to = parse_duration(item.substr(dash + 1));
    } catch (const std::exception&) {
      throw std::invalid_argument(form);
    }
    if (o.worker < 0 || o.worker >= workers)
      throw std::invalid_argument(form + "; worker " + std::to_string(o.worker) + " does not exist");
    if (!(o.to > o.from)) throw std::invalid_argument(form + "; 'to' must be after 'from'");
    out.push_back(o);
  }
  std::stable_sort(out.begin(), out.end(), [](const Outage& a, const Outage& b) { return a.from < b.from; });
  return out;
}

double NetworkModel::link_available_at(double t, const std::vector<int64_t>& participants) const {
  // Windows may overlap or chain: move past each until none holds t.
  for (bool moved = true; moved;) {
    moved = false;
    for (const auto& o : outages_) {
      const bool involved =
          participants.empty() || std::find(participants.begin(), participants.end(), o.worker) != participants.end();
      if (involved && t >= o.from && t < o.to) {
        t = o.to;
        moved = true;
      }
    }
  }
  return t;
}

}  // namespace atl
