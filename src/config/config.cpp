// Reading a config: TOML text and --section.key=value overrides onto the
// fields of fields.cpp (whose defaults are Config{}'s, config.h), and
// to_toml(). Checking the values and the --help text are atoll/setup.h's.
#include "atoll/config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <set>
#include <sstream>

namespace atl {

namespace {

// Assigns a TOML node to a field, or explains why it cannot.
bool assign_node(FieldRef& f, const toml::node& node, std::string& why) {
  if (f.i) {
    if (auto v = node.value_exact<int64_t>()) {
      *f.i = *v;
      return true;
    }
    why = "expected an integer";
  } else if (f.d) {
    if (auto v = node.value_exact<double>()) {
      *f.d = *v;
      return true;
    }
    if (auto v = node.value_exact<int64_t>()) {
      *f.d = static_cast<double>(*v);
      return true;
    }
    why = "expected a number";
  } else if (f.b) {
    if (auto v = node.value_exact<bool>()) {
      *f.b = *v;
      return true;
    }
    why = "expected true or false";
  } else {
    if (auto v = node.value_exact<std::string>()) {
      *f.s = *v;
      return true;
    }
    if (auto v = node.value_exact<bool>(); v && f.bool_words) {
      *f.s = *v ? "true" : "false";
      return true;
    }
    why = "expected a string";
  }
  return false;
}

// Parses text for a field from the command line.
bool assign_text(FieldRef& f, const std::string& text, std::string& why) {
  try {
    size_t used = 0;
    if ((f.i || f.d) && (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))))
      throw std::invalid_argument("blank");
    if (f.i) {
      long long v = std::stoll(text, &used);
      if (used != text.size()) throw std::invalid_argument("trailing");
      *f.i = v;
    } else if (f.d) {
      double v = std::stod(text, &used);
      if (used != text.size()) throw std::invalid_argument("trailing");
      *f.d = v;
    } else if (f.b) {
      if (text == "true" || text == "1") {
        *f.b = true;
      } else if (text == "false" || text == "0") {
        *f.b = false;
      } else {
        why = "expected true or false";
        return false;
      }
    } else {
      *f.s = text;
    }
    return true;
  } catch (const std::exception&) {
    why = f.i ? "expected an integer" : "expected a number";
    return false;
  }
}

}  // namespace

void apply_toml(Config& cfg, const std::string& text, const std::string& source, std::vector<std::string>& errors) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream o;
    o << source << ":" << e.source().begin.line << ":" << e.source().begin.column
      << ": TOML syntax error: " << e.description();
    errors.push_back(o.str());
    return;
  }
  std::set<std::string> known_sections;
  std::map<std::string, FieldRef> by_name;
  visit_fields(cfg, [&](FieldRef& f) {
    by_name.emplace(f.name, f);
    known_sections.insert(f.name.substr(0, f.name.find('.')));
  });
  for (auto&& [section_key, section_node] : table) {
    std::string section(section_key.str());
    // [sweep] describes the runs of a preset (read by `atoll sweep`, see
    // experiment.h); the run configuration itself ignores it.
    if (section == kSweepSection) continue;
    const toml::table* sub = section_node.as_table();
    if (!sub) {
      errors.push_back(source + ": top-level key '" + section +
                       "' must be a [section]; keys live in sections like [train]");
      continue;
    }
    if (!known_sections.count(section)) {
      std::string all;
      for (const auto& s : known_sections) all += (all.empty() ? "" : ", ") + s;
      errors.push_back(source + ": unknown section [" + section + "]; sections are " + all);
      continue;
    }
    for (auto&& [key, node] : *sub) {
      std::string name = section + "." + std::string(key.str());
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        errors.push_back(source + ": unknown key '" + name + "' (see `atoll train --help`)");
        continue;
      }
      std::string why;
      if (!assign_node(it->second, node, why))
        errors.push_back(source + ": " + name + ": " + why + " (" + it->second.type_name() + ")");
    }
  }
}

void apply_overrides(Config& cfg, const std::vector<std::string>& overrides, std::vector<std::string>& errors) {
  std::map<std::string, FieldRef> by_name;
  visit_fields(cfg, [&](FieldRef& f) { by_name.emplace(f.name, f); });
  for (const std::string& o : overrides) {
    auto eq = o.find('=');
    if (eq == std::string::npos) {
      errors.push_back("override '" + o + "': expected section.key=value");
      continue;
    }
    std::string key = o.substr(0, eq), value = o.substr(eq + 1);
    auto it = by_name.find(key);
    if (it == by_name.end()) {
      errors.push_back("unknown key '" + key + "' (see `atoll train --help`)");
      continue;
    }
    std::string why;
    if (!assign_text(it->second, value, why)) errors.push_back(key + "=" + value + ": " + why);
  }
}

void throw_if_errors(const std::vector<std::string>& errors) {
  if (errors.empty()) return;
  std::string msg = errors.size() == 1 ? "invalid configuration:"
                                       : "invalid configuration (" + std::to_string(errors.size()) + " problems):";
  for (const auto& e : errors) msg += "\n  - " + e;
  throw ConfigError(msg);
}

Config read_config(const std::string& path, const std::vector<std::string>& overrides,
                   std::vector<std::string>& errors) {
  Config cfg;
  if (!path.empty()) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ConfigError("cannot read config file '" + path + "'");
    std::stringstream ss;
    ss << in.rdbuf();
    apply_toml(cfg, ss.str(), path, errors);
  }
  apply_overrides(cfg, overrides, errors);
  return cfg;
}

std::string to_toml(const Config& cfg) {
  Config copy = cfg;  // visit_fields hands out writable field pointers; we only read them
  std::ostringstream o;
  std::string section;
  visit_fields(copy, [&](FieldRef& f) {
    std::string s = f.name.substr(0, f.name.find('.'));
    if (s != section) {
      o << (section.empty() ? "" : "\n") << "[" << s << "]\n";
      section = s;
    }
    o << f.name.substr(f.name.find('.') + 1) << " = " << f.value_string() << "\n";
  });
  return o.str();
}

}  // namespace atl
