#include "strategy/table.h"

#include <sstream>
#include <stdexcept>

#include "compress/codec_names.h"
#include "config/checks.h"
#include "strategy/all_methods.h"
#include "strategy/topology_table.h"

namespace atl {
namespace {

// "a b" -> {"a", "b"}: a line's codec keys or what it reads (methods.def).
std::vector<std::string> split_keys(const std::string& text) {
  std::vector<std::string> keys;
  std::istringstream in(text);
  for (std::string key; in >> key;) keys.push_back(key);
  return keys;
}

}  // namespace

const std::vector<Method>& strategy_table() {
  static const std::vector<Method> table = {
#define ATOLL_METHOD(name, traits, warmup_key, validate, cls, codec_keys, reads) \
  {name, traits, split_keys(codec_keys), warmup_key, validate, split_keys(reads)},
#include "strategy/methods.def"
#undef ATOLL_METHOD
  };
  return table;
}

const Method* find_method(const std::string& name) {
  for (const Method& m : strategy_table())
    if (name == m.name) return &m;
  return nullptr;
}

namespace {

// The names of the methods with trait `flag` (0: every method), in table order.
std::vector<std::string> names_with(unsigned flag) {
  std::vector<std::string> names;
  for (const Method& m : strategy_table())
    if (flag == 0 || (m.traits & flag)) names.push_back(m.name);
  return names;
}

bool has(const std::string& name, unsigned flag) {
  const Method* m = find_method(name);
  return m && (m->traits & flag);
}

// The field a key of the table names ("diloco.codec"), read through
// visit_fields, config's one list of keys; a key that names no field of that
// type is a mistake in the table (StrategyTable tests read every key).
FieldRef field_named(Config& cfg, const std::string& key) {
  FieldRef found{"", ""};
  visit_fields(cfg, [&](FieldRef& f) {
    if (f.name == key) found = f;
  });
  if (found.name.empty()) throw std::logic_error("strategy table: no config key '" + key + "'");
  return found;
}

}  // namespace

std::string strategy_choices() { return join_choices(names_with(0)); }

std::vector<std::string> method_sections() {
  std::vector<std::string> sections;
  for (const Method& m : strategy_table())
    for (const std::string& word : m.reads) {
      const std::string section = word.substr(0, word.find('.'));
      if (!one_of(section, sections)) sections.push_back(section);
    }
  return sections;
}

bool method_reads(const Method& m, const std::string& key) {
  const std::string section = key.substr(0, key.find('.'));
  for (const std::string& word : m.reads)
    if (word == key || word == section) return true;
  return false;
}

const std::vector<std::string>& gradient_allreduce_keys() {
  static const std::vector<std::string> keys = {"ddp.overlap", "ddp.bucket_mb", "ddp.first_bucket_mb"};
  return keys;
}

int64_t method_warmup_steps(const Config& cfg) {
  const Method* m = find_method(cfg.strategy.name);
  if (m == nullptr || m->warmup_key == nullptr) return 0;
  Config copy = cfg;
  const FieldRef f = field_named(copy, m->warmup_key);
  if (!f.i) throw std::logic_error("strategy table: " + f.name + " is not an integer");
  return *f.i;
}

void validate_strategy(const Config& c, std::vector<std::string>& e) {
  Problems p(e);
  p.enum_check("strategy.name", c.strategy.name, names_with(0));
  p.need(c.strategy.workers >= 1 && c.strategy.workers <= kMaxWorkers,
         "strategy.workers must be in [1, " + std::to_string(kMaxWorkers) + "]");
  p.need(
      !has(c.strategy.name, kOneWorker) || c.strategy.workers == 1,
      "strategy.name = '" + c.strategy.name + "' trains one worker: set strategy.workers = 1 or pick another strategy");
  p.enum_check("strategy.eval_model", c.strategy.eval_model, {"auto", "global", "average", "worker0"});
  p.need(c.strategy.eval_model != "global" || has(c.strategy.name, kGlobalModel),
         "strategy.eval_model = 'global' needs a method with a global model (" +
             join_choices(names_with(kGlobalModel)) + ")");
  p.enum_check("strategy.topology", c.strategy.topology, topology_names());
  // The methods named from the table, so a new kAnyTopology method is in the
  // message without editing it.
  const bool mixing = c.strategy.topology != "global" && one_of(c.strategy.topology, topology_names());
  p.need(!mixing || has(c.strategy.name, kAnyTopology), "strategy.topology = '" + c.strategy.topology +
                                                            "' applies to " + join_choices(names_with(kAnyTopology)) +
                                                            " only (noloco always uses gossip groups)");
  p.need(c.strategy.correlation_every >= 0, "strategy.correlation_every must be >= 0 (0 = off)");

  // Every codec key of the table, once each, whichever method runs.
  Config copy = c;
  std::vector<std::string> codec_keys;
  for (const Method& m : strategy_table())
    for (const std::string& key : m.codec_keys)
      if (!one_of(key, codec_keys)) {
        codec_keys.push_back(key);
        const FieldRef f = field_named(copy, key);
        if (!f.s) throw std::logic_error("strategy table: " + key + " is not a string");
        validate_codec_key(key, *f.s, e);
      }
  validate_codec_section(c.codec, e);

  // Each method's own section, whichever method runs.
  for (const Method& m : strategy_table())
    if (m.validate) m.validate(c, e);

  // [faults] and robust aggregation act on pseudo-gradient syncs (OuterSync,
  // FaultPlan::active() names the same options).
  const bool sync_faults = !c.faults.absent.empty() || c.faults.drop_prob > 0 || !c.faults.corrupt.empty() ||
                           c.diloco.aggregator != "mean" || c.diloco.clip_norm > 0;
  p.need(!sync_faults || has(c.strategy.name, kOuterSync),
         "faults.absent, faults.drop_prob, faults.corrupt and the diloco.aggregator/clip_norm options act on "
         "pseudo-gradient syncs: use them with strategy.name = " +
             join_choices(names_with(kOuterSync)) + " (not '" + c.strategy.name + "')");
  // The list predates fp4-e2m1 (also dense); the text is kept as it was.
  // An unknown codec is reported by its own key's check above.
  const CodecInfo* diloco_codec = find_codec(c.diloco.codec);
  p.need(!sync_faults || !diloco_codec || !diloco_codec->sparse,
         "faults and robust aggregation need a dense diloco.codec (fp32 | fp16 | bf16 | int8 | fp4), not " +
             c.diloco.codec);
  p.need(c.faults.perturb_global.empty() || has(c.strategy.name, kGlobalModel),
         "faults.perturb_global changes a worker's theta_g: use it with strategy.name = " +
             join_choices(names_with(kGlobalModel)));
  p.need(c.faults.absent.empty() || has(c.strategy.name, kAbsence),
         "faults.absent needs strategy.name = " + join_choices(names_with(kAbsence)) +
             " (a SPARTA exchange would mix an absent worker's stale values)");
}

}  // namespace atl
