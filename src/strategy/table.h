// The strategy table: one line per method (methods.def) with its name, its
// traits, its own config rules, its class and what it reads of the method
// sections (setup refuses an override the chosen method does not read).
// validate(), `atoll train --help`, the benchmarks and the tests read the
// rules here; make_strategy() (make_strategy.cpp) builds the class. Adding a
// method is its file pair plus one line in methods.def.
// Torch-free (config's help strings and the fuzz build include it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// What the checks shared by every method need to know about one.
enum MethodTrait : unsigned {
  kGlobalModel = 1u << 0,  // keeps a global model theta_g: strategy.eval_model = global applies
  kOuterSync = 1u << 1,    // combines pseudo-gradients at outer syncs: [faults] and robust aggregation apply
  kAbsence = 1u << 2,      // a worker can be away and rejoin (faults.absent)
  kAnyTopology = 1u << 3,  // strategy.topology = ring | gossip as well as global
  kOneWorker = 1u << 4,    // trains one worker alone (strategy.workers = 1): the local baseline
};

// A method's own rules on the config: appends one message per problem.
// Called for every method whatever strategy.name is (each checks its own
// section; rules that only matter when the method runs test the name).
using ValidateFn = void (*)(const Config& cfg, std::vector<std::string>& errors);

struct Method {
  const char* name;                     // strategy.name
  unsigned traits;                      // MethodTrait bits
  std::vector<std::string> codec_keys;  // config keys naming a payload codec it uses ("diloco.codec")
  const char* warmup_key;               // its DDP warm-up steps' key; nullptr: it has no warm-up
  ValidateFn validate;                  // its own rules; nullptr if it has none beyond the shared checks
  std::vector<std::string> reads;       // what it reads of the method sections: "diloco" (the whole
                                        // section) or "diloco.inner_steps" (that key alone)
};

// Every method, in the order help, errors and benchmarks list them.
const std::vector<Method>& strategy_table();
// The method named `name`, or nullptr.
const Method* find_method(const std::string& name);
// "single | ddp | ... ": the names for help and errors.
std::string strategy_choices();

// The method sections: those some method's `reads` names ([ddp] [diloco]
// [sparta] ...). The other sections ([train], [codec], [faults], ...) are
// shared by every method.
std::vector<std::string> method_sections();
// Whether method `m` reads the dotted `key` (its section whole, or the key).
bool method_reads(const Method& m, const std::string& key);
// The keys every gradient all-reduce reads (GradientAverager, baselines.h):
// DDP's steps, a warm-up's, and an island's own all-reduce, which the driver
// runs for any method when islands.devices > 1.
const std::vector<std::string>& gradient_allreduce_keys();

// Part of validate() (src/setup/validate.cpp): the [strategy] section, every
// codec key of the table, [codec], each method's own rules, and which methods
// [faults] and robust aggregation apply to.
void validate_strategy(const Config& cfg, std::vector<std::string>& errors);
// The DDP warm-up steps, which every worker takes part in, that fault windows
// must start after: the value of the chosen method's warmup_key, 0 for a
// method without one (or an unknown method).
int64_t method_warmup_steps(const Config& cfg);

}  // namespace atl
