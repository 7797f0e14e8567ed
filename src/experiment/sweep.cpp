// A preset's [sweep]: reading it, expanding runs x grid, and running each
// run as a child `atoll train` into <out_root>/<sweep>/<run>/ (a child
// process per run keeps each run's threads, allocator and failures its own).
#include <poll.h>
#include <sys/wait.h>

#include <toml++/toml.h>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "atoll/config.h"
#include "atoll/experiment.h"
#include "atoll/report.h"
#include "atoll/setup.h"
#include "atoll/train.h"
#include "experiment/run_reuse.h"
#include "launch/process.h"
#include "model/export.h"
#include "report/target_time.h"
#include "train/run_folder.h"
#include "train/stop_signal.h"

namespace atl {
namespace fs = std::filesystem;

namespace {

[[noreturn]] void bad(const std::string& preset, const std::string& what) {
  throw std::invalid_argument(preset + ": [sweep] " + what);
}

std::vector<std::string> string_list(const toml::table& sweep, const char* key, const std::string& preset) {
  std::vector<std::string> out;
  const toml::node* node = sweep.get(key);
  if (!node) return out;
  const toml::array* arr = node->as_array();
  if (!arr) bad(preset, std::string(key) + " must be an array of strings");
  for (const auto& item : *arr) {
    if (!item.is_string()) bad(preset, std::string(key) + " must be an array of strings");
    out.push_back(item.as_string()->get());
  }
  return out;
}

std::string string_value(const toml::table& t, const char* key, const std::string& preset) {
  const toml::node* node = t.get(key);
  if (!node) return "";
  if (!node->is_string()) bad(preset, std::string(key) + " must be a string");
  return node->as_string()->get();
}

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool valid_run_name(const std::string& name) {
  if (name.empty() || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

// "name: key=v key=v" -> a run.
SweepRun parse_run(const std::string& text, const std::string& preset) {
  const auto colon = text.find(':');
  SweepRun run;
  run.name = text.substr(0, colon);
  run.name.erase(std::remove_if(run.name.begin(), run.name.end(), ::isspace), run.name.end());
  if (colon == std::string::npos || !valid_run_name(run.name))
    bad(preset,
        "runs entry '" + text + "' must look like \"name: section.key=value ...\" (name: letters, digits, _ - .)");
  run.overrides = split_words(text.substr(colon + 1));
  for (const auto& o : run.overrides)
    if (o.find('=') == std::string::npos)
      bad(preset, "runs entry '" + run.name + "': override '" + o + "' must be section.key=value");
  return run;
}

struct GridAxis {
  std::string key;
  std::vector<std::string> values;
  std::set<std::string> only;  // run names it applies to; empty = all
};

GridAxis parse_axis(const std::string& text, const std::string& where) {
  GridAxis axis;
  std::string body = text;
  const auto at = text.find('@');
  if (at != std::string::npos) {
    body = text.substr(0, at);
    for (const auto& r : split(text.substr(at + 1), ',')) axis.only.insert(r);
  }
  const auto eq = body.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == body.size())
    throw std::invalid_argument(where + ": grid '" + text + "' must look like section.key=v1,v2[@run,...]");
  axis.key = body.substr(0, eq);
  axis.values = split(body.substr(eq + 1), ',');
  for (const auto& v : axis.values)
    if (v.empty()) throw std::invalid_argument(where + ": grid '" + text + "' has an empty value");
  return axis;
}

// "diloco.inner_steps" + "20" -> "inner_steps20" (a folder-safe suffix).
std::string axis_suffix(const std::string& key, const std::string& value) {
  std::string s = key.substr(key.rfind('.') + 1);
  for (char c : value) s += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '-';
  return s;
}

std::string quote_arg(const std::string& a) {
  if (a.find_first_of(" \t'\"") == std::string::npos) return a;
  return "'" + a + "'";
}

// The overrides `atoll train <preset>` gets for one run of the sweep in dir.
std::vector<std::string> run_args(const SweepRun& run, const std::string& dir) {
  std::vector<std::string> args = run.overrides;
  args.push_back("run.out_dir=" + dir);
  args.push_back("run.name=" + run.name);
  return args;
}

}  // namespace

SweepSpec load_sweep(const std::string& preset, const std::vector<std::string>& extra_grid,
                     const std::vector<std::string>& extra, bool quick, int64_t seeds) {
  std::ifstream in(preset, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read preset '" + preset + "'");
  std::stringstream text;
  text << in.rdbuf();
  toml::table table;
  try {
    table = toml::parse(text.str(), preset);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(preset + ":" + std::to_string(e.source().begin.line) +
                                ": TOML syntax error: " + std::string(e.description()));
  }
  const toml::table* sweep = table[kSweepSection].as_table();
  if (!sweep)
    throw std::invalid_argument(preset + " has no [sweep] section, so there is nothing to sweep (`atoll train " +
                                preset + "` runs it once; add --grid to sweep it)");
  static const std::set<std::string> known = {"name",  "id",     "title",    "paper_claim", "scaled", "runs",
                                              "grid",  "quick",  "baseline", "target_loss", "claim",  "discussion",
                                              "seeds", "effect", "changes",  "against"};
  for (auto&& [k, v] : *sweep) {
    if (!known.count(std::string(k.str()))) {
      std::string all;
      for (const auto& n : known) all += (all.empty() ? "" : ", ") + n;
      bad(preset, "unknown key '" + std::string(k.str()) + "'; keys are " + all);
    }
  }
  SweepSpec spec;
  spec.preset = preset;
  spec.name = string_value(*sweep, "name", preset);
  if (spec.name.empty()) spec.name = fs::path(preset).stem().string();
  if (!valid_run_name(spec.name)) bad(preset, "name '" + spec.name + "' must be letters, digits, _ - .");
  spec.id = string_value(*sweep, "id", preset);
  spec.title = string_value(*sweep, "title", preset);
  spec.paper_claim = string_value(*sweep, "paper_claim", preset);
  spec.scaled = string_value(*sweep, "scaled", preset);
  spec.discussion = string_value(*sweep, "discussion", preset);
  spec.changes = string_value(*sweep, "changes", preset);
  spec.baseline = string_value(*sweep, "baseline", preset);
  if (const toml::node* t = sweep->get("target_loss")) {
    if (!t->is_number() || t->value<double>().value_or(0) < 0) bad(preset, "target_loss must be a number >= 0");
    spec.target_loss = t->value<double>().value_or(0);
  }
  if (const toml::node* k = sweep->get("seeds")) {
    if (!k->is_integer() || k->value<int64_t>().value_or(0) < 1 || k->value<int64_t>().value_or(0) > 100)
      bad(preset, "seeds must be an integer in 1..100 (runs per setting)");
    spec.seeds = k->value<int64_t>().value_or(1);
  }
  if (seeds != 0) {
    if (seeds < 1 || seeds > 100)
      throw std::invalid_argument("--seeds must be in 1..100 (got " + std::to_string(seeds) + ")");
    spec.seeds = seeds;
  }
  auto read_effect = [&](const toml::table& t) {
    const toml::node* n = t.get("effect");
    if (!n) return 0.0;
    if (!n->is_number() || !(n->value<double>().value_or(-1) > 0))
      bad(preset, "effect must be a number > 0 (the smallest difference the claims test for)");
    return n->value<double>().value_or(0);
  };
  spec.effect = read_effect(*sweep);
  if (const toml::node* c = sweep->get("claim")) {
    const toml::array* arr = c->as_array();
    if (!arr) bad(preset, "claims are [[sweep.claim]] tables with text and check");
    for (const auto& item : *arr) {
      const toml::table* t = item.as_table();
      if (!t) bad(preset, "claims are [[sweep.claim]] tables with text and check");
      static const std::set<std::string> claim_keys = {"text",  "check",      "effect",      "holds",
                                                       "fails", "equivalent", "inconclusive"};
      for (auto&& [k, v] : *t)
        if (!claim_keys.count(std::string(k.str())))
          bad(preset, "[[sweep.claim]] has an unknown key '" + std::string(k.str()) +
                          "'; keys are text, check, effect, and holds, fails, equivalent, inconclusive (what "
                          "RESULTS.md says for that outcome)");
      SweepClaim claim;
      claim.text = string_value(*t, "text", preset);
      claim.check = string_value(*t, "check", preset);
      claim.effect = read_effect(*t);
      claim.holds = string_value(*t, "holds", preset);
      claim.fails = string_value(*t, "fails", preset);
      claim.equivalent = string_value(*t, "equivalent", preset);
      claim.inconclusive = string_value(*t, "inconclusive", preset);
      if (claim.check.empty()) bad(preset, "a [[sweep.claim]] has no check");
      spec.claims.push_back(claim);
    }
  }

  std::vector<SweepRun> base;
  const bool runs_given = sweep->get("runs") != nullptr;
  for (const auto& r : string_list(*sweep, "runs", preset)) base.push_back(parse_run(r, preset));
  if (!runs_given) base.push_back({"run", {}, "run", 0, "run", {}});
  for (SweepRun& b : base) b.family = b.name;
  // A quick entry "key=value@run,..." is for those runs alone and wins over
  // their own keys (R7's delay runs set train.steps=4000, which the quick
  // version must shorten too); grid values still win over it. Entries
  // without "@" go to every run, below each run's own keys (further down).
  std::vector<std::string> quick_for_all;
  if (quick)
    for (const auto& q : string_list(*sweep, "quick", preset)) {
      const auto at = q.find('@');
      if (at == std::string::npos) {
        quick_for_all.push_back(q);
        continue;
      }
      const std::string setting = q.substr(0, at);
      if (setting.find('=') == std::string::npos || setting.front() == '=')
        bad(preset, "quick '" + q + "' must look like section.key=value[@run,...]");
      for (const auto& only : split(q.substr(at + 1), ',')) {
        auto run = std::find_if(base.begin(), base.end(), [&](const SweepRun& r) { return r.name == only; });
        if (run == base.end()) bad(preset, "quick '" + q + "' names run '" + only + "', which is not in runs");
        run->overrides.push_back(setting);
      }
    }
  std::vector<GridAxis> axes;
  for (const auto& g : string_list(*sweep, "grid", preset)) axes.push_back(parse_axis(g, preset));
  for (const auto& g : extra_grid) axes.push_back(parse_axis(g, "--grid"));
  spec.against = string_value(*sweep, "against", preset);
  if (!spec.against.empty() &&
      std::none_of(axes.begin(), axes.end(), [&](const GridAxis& a) { return a.key == spec.against; })) {
    std::string keys;
    for (const auto& axis : axes) keys += (keys.empty() ? "" : ", ") + axis.key;
    bad(preset, "against = '" + spec.against +
                    "' is not a key of the grid (the grid's keys: " + (keys.empty() ? "none" : keys) + ")");
  }
  for (const auto& axis : axes)
    for (const auto& only : axis.only)
      if (std::none_of(base.begin(), base.end(), [&](const SweepRun& r) { return r.name == only; }))
        bad(preset, "grid " + axis.key + " names run '" + only + "', which is not in runs");

  for (const auto& b : base) {
    std::vector<SweepRun> expanded{b};
    for (const auto& axis : axes) {
      if (!axis.only.empty() && !axis.only.count(b.name)) continue;
      std::vector<SweepRun> next;
      for (const auto& r : expanded)
        for (const auto& v : axis.values) {
          SweepRun x = r;
          x.name += "_" + axis_suffix(axis.key, v);
          x.overrides.push_back(axis.key + "=" + v);
          x.grid[axis.key] = v;
          next.push_back(std::move(x));
        }
      expanded = std::move(next);
    }
    for (auto& r : expanded) spec.runs.push_back(std::move(r));
  }
  // Quick overrides shorten the preset itself, so a run's own keys and its
  // grid values still win; command-line overrides win over everything.
  const std::vector<std::string>& quick_overrides = quick_for_all;
  if (quick) spec.name += "_quick";
  // Quick and command-line overrides go to every run, whatever its method,
  // as the preset's own keys do: a run keeps those its method reads (an
  // override its method does not read is refused, setup.h), and one that no
  // run reads is refused. A run's own overrides and grid values are its
  // method's alone: load_config() refuses any its method does not read.
  std::set<std::string> read_by_some;         // every-run overrides some run reads
  std::map<std::string, std::string> unread;  // every-run override -> why the first run not reading it does not
  std::set<std::string> names;
  std::vector<SweepRun> seeded;
  for (auto& r : spec.runs) {
    if (!names.insert(r.name).second) bad(preset, "two runs are named '" + r.name + "'");
    int64_t seed = 0;
    try {
      std::vector<std::string> all = quick_overrides;
      all.insert(all.end(), r.overrides.begin(), r.overrides.end());
      all.insert(all.end(), extra.begin(), extra.end());
      const Config any = load_config(preset, all, OverrideCheck::kAnyMethod);
      std::vector<std::string> kept;
      auto keep_read = [&](const std::vector<std::string>& every_run) {
        for (const auto& o : every_run) {
          const std::string why = unread_key_problem(any, o.substr(0, o.find('=')));
          if (!why.empty()) {
            unread.emplace(o, "run '" + r.name + "': " + why);
            continue;
          }
          kept.push_back(o);
          read_by_some.insert(o);
        }
      };
      keep_read(quick_overrides);
      kept.insert(kept.end(), r.overrides.begin(), r.overrides.end());
      keep_read(extra);
      r.overrides = std::move(kept);
      seed = load_config(preset, r.overrides).run.seed;
    } catch (const ConfigError& e) {
      throw std::invalid_argument(preset + ": run '" + r.name + "': " + e.what());
    }
    r.setting = r.name;
    r.seed = seed;
    if (spec.seeds == 1) {
      seeded.push_back(r);
      continue;
    }
    // Seed k of K: run.seed + k - 1 reseeds the model init, the data order
    // and every coin of the method (they all derive from run.seed).
    for (int64_t k = 1; k <= spec.seeds; ++k) {
      SweepRun x = r;
      x.name = r.name + "_s" + std::to_string(k);
      x.seed = seed + k - 1;
      x.overrides.push_back("run.seed=" + std::to_string(x.seed));
      seeded.push_back(std::move(x));
    }
  }
  spec.runs = std::move(seeded);
  for (const auto& [o, why] : unread)
    if (!read_by_some.count(o))
      throw std::invalid_argument(preset + ": " + o + " (for every run) is read by no run of the sweep (" + why + ")");
  if (!spec.baseline.empty() && !names.count(spec.baseline))
    bad(preset, "baseline '" + spec.baseline + "' is not one of the runs");

  spec.command = "build/atoll sweep " + preset;
  for (const auto& g : extra_grid) spec.command += " --grid " + quote_arg(g);
  for (const auto& e : extra) spec.command += " --" + quote_arg(e);
  if (quick) spec.command += " --quick";
  if (seeds != 0) spec.command += " --seeds=" + std::to_string(seeds);
  return spec;
}

std::string sweep_dir(const SweepSpec& spec, const std::string& out_root) {
  std::string root = out_root;
  if (root.empty())
    root = load_config(spec.preset, spec.runs.empty() ? std::vector<std::string>{} : spec.runs.front().overrides)
               .run.out_dir;
  return (fs::path(root) / spec.name).string();
}

namespace {
// The keys that decide what a run computes, as the sweep would run it.
FlatConfig computation_keys(const SweepSpec& spec, const std::vector<std::string>& args) {
  return only_keys(flatten(load_config(spec.preset, args)), is_computation_key);
}
}  // namespace

std::string finished_run_difference(const SweepSpec& spec, const SweepRun& run, const std::string& dir) {
  const auto expected = computation_keys(spec, run_args(run, dir));
  const auto done = load_run((fs::path(dir) / run.name).string()).config;
  for (const auto& [k, v] : expected) {
    auto it = done.find(k);
    if (it == done.end()) return k + " missing";
    if (it->second != v) return k + " = " + it->second + ", the sweep says " + v;
  }
  for (const auto& [k, v] : done)
    if (!expected.count(k)) return k + " not in this version of atoll";
  return "";
}

SweepOutcome run_sweep(const SweepSpec& spec, const SweepOptions& options) {
  if (options.jobs < 1) throw std::invalid_argument("--jobs must be >= 1 (got " + std::to_string(options.jobs) + ")");
  SweepOutcome outcome;
  outcome.dir = sweep_dir(spec, options.out_root);
  fs::create_directories(outcome.dir);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int64_t threads = std::max<int64_t>(1, static_cast<int64_t>(cores) / options.jobs);

  struct Pending {
    const SweepRun* run;
    std::vector<std::string> args;
    bool resume = false;  // continues an interrupted run from its checkpoint
  };
  std::vector<Pending> todo;
  std::optional<FinishedRunIndex> twins;  // built at the first run with no folder
  for (const auto& run : spec.runs) {
    const fs::path dir = fs::path(outcome.dir) / run.name;
    outcome.run_dirs.push_back(dir.string());
    std::vector<std::string> args = run_args(run, outcome.dir);
    bool resume = false;
    if (fs::exists(dir / "summary.json")) {
      const std::string key = finished_run_difference(spec, run, outcome.dir);
      if (key.empty()) {
        ++outcome.skipped;
        if (!options.quiet) std::cout << "sweep: " << run.name << " already finished, kept\n";
        continue;
      }
      if (!options.overwrite)
        throw std::runtime_error("sweep: '" + dir.string() + "' is a finished run with a different config (" + key +
                                 "); delete it, change the sweep name, or pass --overwrite to re-run it");
      args.push_back("run.overwrite=true");
    } else if (!fs::exists(dir) && options.reuse) {
      if (!twins) twins.emplace(fs::path(outcome.dir).parent_path(), outcome.dir);
      const fs::path twin = twins->find(computation_keys(spec, args));
      if (!twin.empty()) {
        copy_finished_run(twin, dir);
        ++outcome.copied;
        if (!options.quiet)
          std::cout << "sweep: " << run.name << " is the finished run " << twin.string()
                    << " (every computation key equal), copied\n";
        continue;
      }
    } else if (fs::exists(dir)) {
      if (!holds_only_run_entries(dir))
        throw std::runtime_error("sweep: '" + dir.string() +
                                 "' exists but is not a run folder this sweep wrote; move it away");
      // An interrupted run (Ctrl-C, a kill, a crash): the run's own resume
      // policy (run.resume = auto) continues it from its newest intact
      // checkpoint when that was made with the config the sweep asks for
      // now, else starts it again; plan_start() says which it will do.
      args.push_back("run.resume=auto");
      const StartPlan start = plan_start(load_config(spec.preset, args));
      resume = start.resume;
      if (resume) {
        ++outcome.resumed;
        if (!options.quiet)
          std::cout << "sweep: " << run.name << " was interrupted; resuming after step " << start.step << "\n";
      } else if (!options.quiet) {
        std::cout << "sweep: " << run.name << " was interrupted; starting it again (" << start.why << ")\n";
      }
    }
    todo.push_back({&run, args, resume});
  }

  // Runs write to <run>.log when several share the terminal (or quiet).
  const bool to_log = options.jobs > 1 || options.quiet;
  // Ctrl-C or SIGTERM: each run gets one SIGTERM from the sweep (the runs sit
  // in process groups of their own, so a terminal's Ctrl-C reaches them only
  // this way, once), stops after writing a checkpoint, and the next sweep
  // resumes it. A second signal ends the sweep at once, as it ends a run.
  SignalScope signals(stop_signal_options());
  bool forwarded = false;
  struct Running {
    Child child;
    std::string name;
  };
  std::vector<Running> running;
  auto stop_running = [&]() {
    if (forwarded) return;
    forwarded = true;
    for (const auto& r : running) signal_group(r.child, SIGTERM);
  };
  std::string failure;  // the first run that failed (not stopped by a signal)
  // Waits for one run to exit; the signal scope wakes it on SIGCHLD and on
  // SIGINT/SIGTERM (the 100 ms cap is only a safety net).
  auto wait_one = [&]() {
    auto done = running.end();
    while ((done = std::find_if(running.begin(), running.end(), [](Running& r) { return reap(r.child); })) ==
           running.end()) {
      pollfd wake{signals.wake_fd(), POLLIN, 0};
      if (::poll(&wake, 1, 100) < 0 && errno != EINTR) throw std::runtime_error("sweep: poll failed");
      signals.take_signals();  // stop_requested() counts them
      if (stop_requested()) stop_running();
    }
    const std::string name = done->name;
    const int status = done->child.status;
    running.erase(done);
    const bool stopped = WIFEXITED(status) && WEXITSTATUS(status) == 130;  // checkpoint written
    if (stopped) {
      if (!options.quiet) std::cout << "sweep: " << name << " stopped with a checkpoint\n" << std::flush;
      stop_running();
      return;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      stop_running();
      if (failure.empty()) {
        const std::string how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                    : "exit code " + std::to_string(WEXITSTATUS(status));
        failure = "sweep: run '" + name + "' failed (" + how + "; " +
                  (to_log ? "log: " + (fs::path(outcome.dir) / (name + ".log")).string()
                          : std::string("its output is above")) +
                  ")";
      }
      return;
    }
    ++outcome.ran;
    if (!options.quiet) std::cout << "sweep: " << name << " finished\n" << std::flush;
  };
  size_t index = 0;
  for (const auto& p : todo) {
    ++index;
    while (static_cast<int64_t>(running.size()) >= options.jobs) wait_one();
    if (forwarded || stop_requested()) break;  // stopping: start nothing new
    std::vector<std::string> argv = {options.exe, "train", spec.preset};
    for (const auto& a : p.args) argv.push_back("--" + a);
    if (options.jobs > 1) argv.push_back("--run.threads=" + std::to_string(threads));
    const std::string log = (fs::path(outcome.dir) / (p.run->name + ".log")).string();
    if (!options.quiet)
      std::cout << "sweep: [" << index << "/" << todo.size() << "] " << p.run->name
                << (to_log ? " (log: " + log + ")" : "") << "\n"
                << std::flush;
    SpawnOptions how;
    if (to_log) how.log_file = log;
    how.append = p.resume;  // a resumed run continues the log of its first part
    how.signals = &signals;
    Child child;
    try {
      child = spawn(plan_exec(argv), how);
    } catch (const std::system_error& e) {
      throw std::runtime_error(std::string("sweep: ") + e.what());
    }
    if (child.exec_errno != 0) {
      // Where the run's own output goes; it exits 127 and fails like any run.
      const std::string line = "sweep: cannot run " + options.exe + ": " + std::strerror(child.exec_errno) + "\n";
      if (to_log) {
        std::ofstream(log, std::ios::app) << line;
      } else {
        std::cerr << line << std::flush;
      }
    }
    running.push_back({child, p.run->name});
  }
  while (!running.empty()) wait_one();
  if (!failure.empty()) throw std::runtime_error(failure);
  if (forwarded || stop_requested())
    throw SweepInterrupted("sweep interrupted: " + std::to_string(outcome.ran + outcome.skipped + outcome.copied) +
                           " of " + std::to_string(spec.runs.size()) +
                           " runs finished and are kept; run the same command again to continue (stopped runs "
                           "resume from their checkpoints)");
  return outcome;
}

SeedMetrics sweep_metrics(const SweepSpec& spec, const std::string& dir) {
  SeedMetrics out;
  for (const auto& run : spec.runs) {
    const fs::path folder = fs::path(dir) / run.name;
    if (!fs::exists(folder / "summary.json")) continue;
    const RunData d = load_run(folder.string());
    RunMetrics m;
    m.loss = d.final_val_loss;
    m.ppl = std::exp(d.final_val_loss);
    m.bytes = d.bytes_sent_per_worker;
    m.time = d.sim_seconds;
    m.corr = d.final_correlation;
    m.update_correlation = d.final_update_correlation;
    m.disagreement = d.final_disagreement;
    m.util = d.utilisation;
    if (spec.target_loss > 0) {
      const TargetTime t = target_time(d, spec.target_loss);  // censored at the run's end if never reached
      m.ttt = t.seconds;
      m.reached = t.reached;
    }
    m.seed = run.seed;
    out[run.setting].push_back(m);  // spec.runs lists a setting's seeds in order
  }
  return out;
}

}  // namespace atl
