// describe_fields(): the --help text. Config's help lines name other areas'
// lists of choices by placeholders (src/config/fields.cpp); they are filled
// here, above those areas, from each one's own table.
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "atoll/setup.h"
#include "compress/codec_names.h"
#include "config/checks.h"
#include "net/collective_algorithms.h"
#include "net/devices.h"
#include "net/island_exchanges.h"
#include "strategy/table.h"
#include "strategy/topology_table.h"

namespace atl {
namespace {

std::string with_choices(std::string help) {
  const std::vector<std::pair<std::string, std::string>> lists = {
      {"{strategies}", strategy_choices()},
      {"{codecs}", codec_choices()},
      {"{dense codecs}", dense_codec_choices()},
      {"{devices}", compute_device_names()},
      {"{topologies}", join_choices(topology_names())},
      {"{collective algorithms}", collective_algorithm_choices()},
      {"{collective algorithm help}", collective_algorithm_help()},
      {"{island exchanges}", island_exchange_choices()},
      {"{island exchange help}", island_exchange_help()},
  };
  for (const auto& [placeholder, choices] : lists)
    for (size_t at = help.find(placeholder); at != std::string::npos; at = help.find(placeholder, at + choices.size()))
      help.replace(at, placeholder.size(), choices);
  return help;
}

}  // namespace

std::string describe_fields() {
  Config defaults;
  std::ostringstream o;
  o << "Configuration keys (TOML [section] key = value, or --section.key=value):\n";
  std::string section;
  visit_fields(defaults, [&](FieldRef& f) {
    std::string s = f.name.substr(0, f.name.find('.'));
    if (s != section) {
      o << "\n  [" << s << "]\n";
      section = s;
    }
    std::string left = "  --" + f.name + "=" + f.value_string();
    o << left;
    if (left.size() < 44)
      o << std::string(44 - left.size(), ' ');
    else
      o << "\n" << std::string(44, ' ');
    o << f.type_name() << ": " << with_choices(f.help) << "\n";
  });
  return o.str();
}

std::string field_help(const std::string& key) {
  Config c;
  std::string help;
  visit_fields(c, [&](FieldRef& f) {
    if (f.name == key) help = with_choices(f.help);
  });
  return help;
}

}  // namespace atl
