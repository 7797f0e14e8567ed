// A config as a flat, sorted map of "section.key" -> value text: the one form
// in which configs are compared (resume checks, rank start-up checks, sweep
// and report differences) and the one text layout checkpoints store.
#include <toml++/toml.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "atoll/config.h"

namespace atl {
namespace {

// Doubles as the shortest %g form (from 6 significant digits up) that reads
// back as the same double: exact, and still readable ("0.001", not
// "0.0010000000000000000208"). Checkpoints store these strings, so the
// format must never change.
std::string shortest_double(double v) {
  char buf[40];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string node_text(const toml::node& node) {
  if (auto s = node.as_string()) return '"' + s->get() + '"';
  if (auto f = node.as_floating_point()) return shortest_double(f->get());
  if (auto i = node.as_integer()) return std::to_string(i->get());
  if (auto b = node.as_boolean()) return b->get() ? "true" : "false";
  std::ostringstream o;
  o << "(" << node.type() << ")";
  return o.str();
}

}  // namespace

FlatConfig flatten(const Config& cfg) {
  Config copy = cfg;  // visit_fields hands out writable field pointers; we only read them
  FlatConfig out;
  visit_fields(copy, [&](FieldRef& f) {
    if (f.i)
      out[f.name] = std::to_string(*f.i);
    else if (f.d)
      out[f.name] = shortest_double(*f.d);
    else if (f.b)
      out[f.name] = *f.b ? "true" : "false";
    else
      out[f.name] = '"' + *f.s + '"';
  });
  return out;
}

FlatConfig flatten_toml(const std::string& toml_text, const std::string& source) {
  toml::table table;
  try {
    table = toml::parse(toml_text, source);
  } catch (const toml::parse_error& e) {
    throw ConfigError(source + ": TOML syntax error: " + std::string(e.description()));
  }
  FlatConfig flat;
  for (auto&& [section, node] : table) {
    const toml::table* sub = node.as_table();
    if (!sub) continue;
    for (auto&& [key, value] : *sub) flat[std::string(section.str()) + "." + std::string(key.str())] = node_text(value);
  }
  return flat;
}

std::string flat_lines(const FlatConfig& flat) {
  std::string out;
  for (const auto& [key, value] : flat) out += key + " = " + value + "\n";
  return out;
}

FlatConfig parse_flat_lines(const std::string& text) {
  FlatConfig out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    const size_t eq = line.find(" = ");
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 3);
    start = end + 1;
  }
  return out;
}

FlatConfig with_keys_added_later(FlatConfig done) {
  // Added with SparseLoCo, MuLoCo and the divergence check (stop 46): the chunked
  // codecs' knobs and [sparseloco] only act when their codec or method is
  // chosen; faults.perturb_global is empty by default; run.divergence_check
  // = auto checks only real runs, and runs were compared and reused only
  // as simulations.
  // Muon's knobs (optim.muon_*) act only with optim.name = muon, [desloc] only
  // with its method. streaming.eager = false is Streaming DiLoCo as before.
  static const char* const kAdded[] = {"train.gemm",
                                       "codec.chunk",
                                       "codec.chunk_topk",
                                       "sparseloco.outer_lr",
                                       "sparseloco.error_decay",
                                       "sparseloco.codec",
                                       "faults.perturb_global",
                                       "run.divergence_check",
                                       "optim.muon_momentum",
                                       "optim.muon_nesterov",
                                       "optim.muon_ns_steps",
                                       "optim.muon_exclude",
                                       "desloc.param_period",
                                       "desloc.first_moment_factor",
                                       "desloc.second_moment_factor",
                                       "network.download_bandwidth",
                                       "network.worker_download_bandwidth",
                                       "network.island_download_bandwidth",
                                       "run.peak_window_steps",
                                       "streaming.eager"};
  static const FlatConfig defaults = flatten(Config{});
  for (const char* key : kAdded)
    if (!done.count(key)) done.emplace(key, defaults.at(key));
  return done;
}

bool is_computation_key(const std::string& key) {
  return !(key == "run.name" || key == "run.out_dir" || key == "run.overwrite" || key == "run.progress" ||
           key == "run.threads" || key == "run.resume");
}

bool shapes_trajectory(const std::string& key) {
  if (key.rfind("run.", 0) == 0) return key == "run.seed";
  return key != "data.dir" && key != "data.data_root";
}

FlatConfig only_keys(const FlatConfig& flat, bool (*keep)(const std::string&)) {
  FlatConfig out;
  for (const auto& [key, value] : flat)
    if (keep(key)) out.emplace(key, value);
  return out;
}

std::vector<ConfigChange> config_changes(const FlatConfig& a, const FlatConfig& b) {
  std::set<std::string> keys;
  for (const auto& kv : a) keys.insert(kv.first);
  for (const auto& kv : b) keys.insert(kv.first);
  std::vector<ConfigChange> out;
  for (const auto& k : keys) {
    auto ia = a.find(k), ib = b.find(k);
    const std::string va = ia == a.end() ? "(absent)" : ia->second, vb = ib == b.end() ? "(absent)" : ib->second;
    if (va != vb) out.push_back({k, va, vb});
  }
  return out;
}

std::string describe_difference(const FlatConfig& a, const FlatConfig& b, const std::string& a_label,
                                const std::string& b_label) {
  const std::vector<ConfigChange> changes = config_changes(a, b);
  std::string out;
  for (size_t i = 0; i < changes.size() && i < 4; ++i)
    out += (i ? "; " : "") + changes[i].key + " = " + changes[i].a + " " + a_label + " but " + changes[i].b + " " +
           b_label;
  if (changes.size() > 4) out += "; and " + std::to_string(changes.size() - 4) + " more";
  return out.empty() ? "(no difference)" : out;
}

}  // namespace atl
