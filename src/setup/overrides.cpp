// An override of a key the chosen method does not read is refused (issue 35):
// `--strategy.name=sparta --diloco.ddp_warmup_steps=100` would otherwise run
// SPARTA without the warm-up its command line asks for. Config files keep
// such keys (a preset sets several methods' keys and `atoll sweep` picks the
// method per run), so only overrides are held to the chosen method. What a
// method reads is the strategy table's `reads` column (methods.def); this
// area, above config and strategy, joins the two.
#include <set>
#include <string>
#include <vector>

#include "atoll/setup.h"
#include "config/checks.h"
#include "strategy/table.h"

namespace atl {
namespace {

// "[sparta], diloco.inner_steps": a method's `reads` as a message says it.
std::string describe_reads(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words)
    out += (out.empty() ? "" : ", ") + (w.find('.') == std::string::npos ? "[" + w + "]" : w);
  return out.empty() ? "no method section" : out;
}

}  // namespace

std::string unread_key_problem(const Config& cfg, const std::string& key) {
  const std::string section = key.substr(0, key.find('.'));
  if (!one_of(section, method_sections())) return "";  // a shared section: every method's
  const Method* method = find_method(cfg.strategy.name);
  if (method == nullptr || method_reads(*method, key)) return "";
  // Islands: the driver averages each island's gradients for any method.
  const bool gradient_key = one_of(key, gradient_allreduce_keys());
  if (gradient_key && island_layout(cfg).devices > 1) return "";

  std::vector<std::string> of_section;  // the keys of this section it reads
  for (const std::string& w : method->reads)
    if (w.rfind(section + ".", 0) == 0) of_section.push_back(w);
  std::string readers;
  for (const Method& m : strategy_table())
    if (method_reads(m, key)) readers += (readers.empty() ? "" : ", ") + std::string(m.name);
  const std::string name = "strategy '" + cfg.strategy.name + "'";
  std::string why =
      of_section.empty()
          ? name + " reads no [" + section + "] keys (it reads " + describe_reads(method->reads) + ")"
          : name + " does not read " + key + " (of [" + section + "] it reads " + describe_reads(of_section) + ")";
  why += "; drop it, or choose a method that reads " + key + ": " + readers;
  if (gradient_key) why += " (with islands.devices > 1 every method reads it)";
  return why;
}

void check_overrides_read(const Config& cfg, const std::vector<std::string>& overrides,
                          std::vector<std::string>& errors) {
  Config copy = cfg;  // visit_fields hands out writable fields; only their names are read
  std::set<std::string> keys;
  visit_fields(copy, [&](FieldRef& f) { keys.insert(f.name); });
  for (const std::string& o : overrides) {
    const auto eq = o.find('=');
    // A malformed override or an unknown key: read_config() reported it.
    if (eq == std::string::npos || !keys.count(o.substr(0, eq))) continue;
    const std::string why = unread_key_problem(cfg, o.substr(0, eq));
    if (!why.empty()) errors.push_back(o + ": " + why);
  }
}

}  // namespace atl
