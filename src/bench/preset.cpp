// preset: the compare preset as a user runs it, `atoll train
// configs/compare.toml` in a child process: start-up (process start to the
// first training step, against the bare process load of `atoll --help`)
// and what evaluation costs against training in that run.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "bench/measure.h"
#include "util/format.h"
#include "util/json_input.h"

namespace atl::bench {
namespace {

namespace fs = std::filesystem;

std::string this_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("bench preset: cannot find this program (/proc/self/exe): " + ec.message());
  return p.string();
}

// configs/compare.toml from the working directory, else next to the build.
std::string compare_preset(const std::string& exe) {
  for (const fs::path& p : {fs::path("configs/compare.toml"), fs::path(exe).parent_path() / "../configs/compare.toml"})
    if (fs::exists(p)) return p.string();
  throw std::runtime_error("bench preset: configs/compare.toml not found (run from the repository's root)");
}

std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Wall seconds of `command` (its output discarded); throws when it fails.
double run_seconds(const std::string& command) {
  const auto t0 = Clock::now();
  const int rc = std::system((command + " > /dev/null 2>&1").c_str());
  if (rc != 0) throw std::runtime_error("bench preset: `" + command + "` failed (status " + std::to_string(rc) + ")");
  return since(t0);
}

// The end event of a finished run folder.
nlohmann::json end_event(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::string line;
  nlohmann::json end;
  while (std::getline(in, line))
    if (line.find("\"event\":\"end\"") != std::string::npos)
      end = parse_json_input(line, (run / "metrics.jsonl").string());
  if (end.is_null()) throw std::runtime_error("bench preset: " + run.string() + " has no end event");
  return end;
}

}  // namespace

void run_preset(const Context& ctx, Sink& sink) {
  const std::string exe = this_executable(), preset = compare_preset(exe);
  const fs::path out = fs::temp_directory_path() / ("atoll_bench_preset_" + std::to_string(getpid()));
  fs::create_directories(out);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{out};

  double load = 1e300;
  for (int k = 0; k < 3; ++k) load = std::min(load, run_seconds(quoted(exe) + " --help"));

  // The preset as shipped (DDP, 4 workers, evaluations every 100 steps and
  // the full validation split at the end); --quick runs a quarter of it.
  const int64_t steps = ctx.opts.quick ? 200 : 800;
  const std::string common =
      quoted(exe) + " train " + quoted(preset) + " --data.data_root=" + quoted(ctx.opts.data_root) +
      " --run.out_dir=" + quoted(out.string()) + " --run.progress=false --train.steps=" + std::to_string(steps);
  double startup = 1e300;
  nlohmann::json end;
  for (int k = 0; k < (ctx.opts.quick ? 1 : 2); ++k) {
    const std::string name = "ddp" + std::to_string(k);
    run_seconds(common + " --run.name=" + name);
    end = end_event(out / name);
    startup = std::min(startup, end.value("startup_s", 1e300));
  }
  BenchFigure s = figure("preset", "start-up to the first step, atoll train configs/compare.toml", startup, "s",
                         "process load (atoll --help)", load);
  s.target = "< 1 s";
  s.target_met = startup < 1.0;
  sink.add(s);

  const double wall = end.at("wall_s").get<double>(), eval = end.at("eval_s").get<double>();
  BenchFigure e = figure("preset", "evaluation, compare preset (" + std::to_string(steps) + " steps)", eval, "s",
                         "the run's wall time", wall);
  e.note = "full split at the end: " + format_number("%.2f s", end.at("final_eval_s").get<double>()) + " for " +
           std::to_string(end.at("final_eval_tokens").get<int64_t>()) + " tokens";
  sink.add(e);
  sink.add(
      figure("preset", "training throughput, compare preset DDP", end.at("tokens_per_s").get<double>(), "tokens/s"));
}

}  // namespace atl::bench
