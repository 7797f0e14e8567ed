// The checks of the sections config owns ([run], [data], [model], [optim],
// [train], [faults]) and the parsers of the fault schedules.
#include "atoll/config.h"
#include "config/checks.h"
#include "config/validate.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <vector>

namespace atl {

namespace {
void validate_torchscript_model(const Config& c, Problems& p);

// Text that names a folder atoll creates and may later replace: no NUL (C
// calls stop there, so "..\0x" would name the parent), no control
// characters (they reach terminals and logs), no ".." component (a name
// that leaves its parent folder).
bool plain_path_text(const std::string& s) {
  for (unsigned char ch : s)
    if (ch < 0x20 || ch == 0x7f) return false;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t end = std::min(s.find('/', start), s.size());
    if (s.compare(start, end - start, "..") == 0) return false;
    start = end + 1;
  }
  return true;
}
}  // namespace

// validate() (validate.cpp).

void validate_training(const Config& c, std::vector<std::string>& e) {
  Problems p(e);
  p.need(!c.run.name.empty() && c.run.name.find('/') == std::string::npos && c.run.name != "." &&
             plain_path_text(c.run.name),
         "run.name must be a non-empty folder name without '/', '..', NUL or control characters");
  p.need(!c.run.out_dir.empty() && plain_path_text(c.run.out_dir),
         "run.out_dir must be a non-empty path without '..' components, NUL or control characters");
  p.need(c.run.threads >= 0, "run.threads must be >= 0 (0 = all cores)");
  p.need(c.run.checkpoint_every >= 0, "run.checkpoint_every must be >= 0 (0 = only when stopped early)");
  p.need(c.run.keep_checkpoints >= 1, "run.keep_checkpoints must be >= 1");
  p.need(c.run.stop_at >= 0 && c.run.stop_at < std::max<int64_t>(c.train.steps, 1),
         "run.stop_at must be in [0, train.steps) (0 = run to the end)");
  p.enum_check("run.divergence_check", c.run.divergence_check, {"auto", "on", "off"});
  p.need(c.run.peak_window_steps >= 1, "run.peak_window_steps must be >= 1 step");
  p.enum_check("run.resume", c.run.resume, {"false", "true", "auto"});
  p.need(!(c.run.resume == "true" && c.run.overwrite),
         "run.resume and run.overwrite exclude each other: resume continues "
         "the run folder, overwrite replaces it");
  p.enum_check("data.dataset", c.data.dataset, {"brown", "text", "bin", "mnist", "npy"});
  p.enum_check("data.shard", c.data.shard, {"iid", "noniid"});
  p.need(c.data.vocab_size >= 0 && c.data.vocab_size <= 65536,
         "data.vocab_size must be in [0, 65536] (uint16 token files)");
  p.need(c.data.dataset != "text" || !c.data.dir.empty(),
         "data.dataset = 'text' needs data.dir: a folder made by `atoll prepare text FILE OUT` (or `atoll prepare "
         "brown ... --tokenizer byte`)");
  p.need(c.data.dataset != "npy" || !c.data.dir.empty(),
         "data.dataset = 'npy' needs data.dir: a folder holding train_inputs.npy, train_targets.npy, val_inputs.npy "
         "and val_targets.npy");
  p.enum_check("model.kind", c.model.kind, {"gpt", "mlp", "cnn", "torchscript"});
  const bool image_model = c.model.kind == "mlp" || c.model.kind == "cnn";
  const bool npy = c.data.dataset == "npy";
  if (c.model.kind != "torchscript") {  // a TorchScript model takes whatever the data are
    p.need(npy || image_model == (c.data.dataset == "mnist"),
           "model.kind = '" + c.model.kind + "' does not fit data.dataset = '" + c.data.dataset +
               "': gpt trains on text, mlp and cnn on mnist (npy data suit any model whose inputs they match)");
  }
  p.need(!(npy && c.model.kind == "gpt" && c.data.vocab_size < 1),
         "data.dataset = 'npy' with model.kind = 'gpt' needs data.vocab_size: the number of token ids");
  validate_torchscript_model(c, p);
  p.need(c.model.n_layer >= 1, "model.n_layer must be >= 1");
  p.need(c.model.n_head >= 1, "model.n_head must be >= 1");
  p.need(c.model.n_embd >= 1 && c.model.n_head >= 1 && c.model.n_embd % c.model.n_head == 0,
         "model.n_embd must be a positive multiple of model.n_head");
  p.need(c.model.block_size >= 1, "model.block_size must be >= 1");
  p.need(c.model.dropout >= 0 && c.model.dropout < 1, "model.dropout must be in [0, 1)");
  p.need(c.model.mlp_hidden >= 1, "model.mlp_hidden must be >= 1");
  p.enum_check("optim.name", c.optim.name, {"adamw", "muon", "sgd"});
  p.need(c.optim.muon_momentum >= 0 && c.optim.muon_momentum < 1, "optim.muon_momentum (mu) must be in [0, 1)");
  p.need(c.optim.muon_ns_steps >= 1 && c.optim.muon_ns_steps <= 100, "optim.muon_ns_steps must be in 1..100");
  try {
    const std::regex re(c.optim.muon_exclude);
    (void)re;
  } catch (const std::regex_error& ex) {
    p.need(false, "optim.muon_exclude is not a valid regular expression (ECMAScript): " + std::string(ex.what()));
  }
  p.need(c.optim.lr > 0 && std::isfinite(c.optim.lr), "optim.lr must be > 0");
  p.need(c.optim.min_lr >= 0 && c.optim.min_lr <= c.optim.lr, "optim.min_lr must be in [0, optim.lr]");
  p.need(c.optim.warmup_steps >= 0, "optim.warmup_steps must be >= 0");
  p.need(c.optim.beta1 >= 0 && c.optim.beta1 < 1, "optim.beta1 must be in [0, 1)");
  p.need(c.optim.beta2 >= 0 && c.optim.beta2 < 1, "optim.beta2 must be in [0, 1)");
  p.need(c.optim.weight_decay >= 0, "optim.weight_decay must be >= 0");
  p.need(c.optim.grad_clip >= 0, "optim.grad_clip must be >= 0 (0 = off)");
  p.enum_check("optim.schedule", c.optim.schedule, {"cosine", "constant"});
  p.need(c.train.steps >= 1, "train.steps must be >= 1");
  p.need(c.train.batch_size >= 1, "train.batch_size must be >= 1");
  p.need(c.train.eval_every >= 0, "train.eval_every must be >= 0 (0 = only at the end)");
  p.need(c.train.eval_batches >= 1, "train.eval_batches must be >= 1");
  p.enum_check("train.final_eval", c.train.final_eval, {"full", "sample"});
  p.need(c.train.eval_batch_size >= 1, "train.eval_batch_size must be >= 1");
  p.need(c.train.log_every >= 1, "train.log_every must be >= 1");
  p.enum_check("train.precision", c.train.precision, {"fp32", "bf16", "auto"});
  p.enum_check("train.gemm", c.train.gemm, {"openblas", "onednn", "auto"});
}

namespace {
void validate_torchscript_model(const Config& c, Problems& p) {
  const bool ts = c.model.kind == "torchscript";
  p.need(!ts || !c.model.path.empty(),
         "model.kind = 'torchscript' needs model.path: a file saved with torch.jit.script(module).save(path)");
  p.need(ts || c.model.path.empty(),
         "model.path is for model.kind = 'torchscript' (model.kind is '" + c.model.kind + "')");
  p.enum_check("model.loss", c.model.loss, {"auto", "cross_entropy", "mse"});
  p.need(ts || c.model.loss == "auto",
         "model.loss is for model.kind = 'torchscript'; built-in models use cross-entropy");
  // 0 is the default: atoll counts a module's FLOPs when the run starts (src/model/flop_count.h).
  p.need(c.model.flops_per_sample >= 0 && std::isfinite(c.model.flops_per_sample),
         "model.flops_per_sample must be >= 0 (0 = count them from one forward pass)");
  p.need(ts || !c.model.reinit,
         "model.reinit is for model.kind = 'torchscript' (built-in models are always drawn from run.seed)");
}
}  // namespace

void validate_faults(const Config& c, int64_t warmup, std::vector<std::string>& e) {
  Problems p(e);
  p.need(c.faults.drop_prob >= 0 && c.faults.drop_prob <= 1, "faults.drop_prob (q) must be in [0, 1]");
  auto check_windows = [&](const std::string& key, const std::string& text, bool with_kind) {
    try {
      for (const auto& w : parse_fault_windows(text, key, with_kind)) {
        p.need(w.worker < c.strategy.workers,
               key + ": worker " + std::to_string(w.worker) +
                   " does not exist (strategy.workers = " + std::to_string(c.strategy.workers) + ")");
        p.need(w.from >= warmup, key + ": windows start at or after the DDP warm-up (" + std::to_string(warmup) +
                                     " steps), which every worker takes part in");
      }
    } catch (const std::invalid_argument& ex) {
      e.push_back(ex.what());
    }
  };
  check_windows("faults.absent", c.faults.absent, false);
  check_windows("faults.corrupt", c.faults.corrupt, true);
  try {
    for (const auto& s : parse_perturbations(c.faults.perturb_global)) {
      p.need(s.worker < c.strategy.workers,
             "faults.perturb_global: worker " + std::to_string(s.worker) +
                 " does not exist (strategy.workers = " + std::to_string(c.strategy.workers) + ")");
      p.need(s.step >= 1 && s.step <= c.train.steps,
             "faults.perturb_global: step " + std::to_string(s.step) + " is not in [1, train.steps]");
    }
  } catch (const std::invalid_argument& ex) {
    e.push_back(ex.what());
  }
  try {
    for (const auto& s : parse_speed_schedule(c.faults.speed_schedule))
      p.need(s.worker < c.strategy.workers,
             "faults.speed_schedule: worker " + std::to_string(s.worker) +
                 " does not exist (strategy.workers = " + std::to_string(c.strategy.workers) + ")");
  } catch (const std::invalid_argument& ex) {
    e.push_back(ex.what());
  }
}

namespace {

int64_t parse_count(const std::string& text, const std::string& what) {
  size_t used = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || v < 0) throw std::invalid_argument(what);
  return v;
}

std::string trim_spaces(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = trim_spaces(text.substr(start, end - start));
    if (!item.empty()) out.push_back(item);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::vector<FaultWindow> parse_fault_windows(const std::string& text, const std::string& key, bool with_kind) {
  const std::string form = key + " = '" + text + "': expected a comma list of 'worker@from-to" +
                           (with_kind ? std::string(":kind' (kind nan | inf | scale)") : std::string("'")) +
                           " in steps, e.g. '2@100-300'" + (with_kind ? ":nan" : "") + " (to empty = to the end)";
  std::vector<FaultWindow> out;
  for (std::string item : split_list(text)) {
    FaultWindow w;
    if (with_kind) {
      const size_t colon = item.find(':');
      if (colon == std::string::npos) throw std::invalid_argument(form);
      w.kind = item.substr(colon + 1);
      if (w.kind != "nan" && w.kind != "inf" && w.kind != "scale") throw std::invalid_argument(form);
      item = item.substr(0, colon);
    }
    const size_t at = item.find('@'), dash = item.find('-');
    if (at == std::string::npos || dash == std::string::npos || dash < at) throw std::invalid_argument(form);
    w.worker = parse_count(item.substr(0, at), form);
    w.from = parse_count(item.substr(at + 1, dash - at - 1), form);
    const std::string to = item.substr(dash + 1);
    w.to = to.empty() ? -1 : parse_count(to, form);
    if (w.to >= 0 && w.to <= w.from) throw std::invalid_argument(form + "; 'to' must be after 'from'");
    out.push_back(w);
  }
  return out;
}

std::vector<Perturbation> parse_perturbations(const std::string& text) {
  const std::string form = "faults.perturb_global = '" + text +
                           "': expected a comma list of 'worker@step' or 'worker@step:tensor', e.g. '1@40' or "
                           "'1@40:h0.c_fc.weight'";
  std::vector<Perturbation> out;
  for (const std::string& item : split_list(text)) {
    const size_t at = item.find('@'), colon = item.find(':');
    if (at == std::string::npos || (colon != std::string::npos && colon < at)) throw std::invalid_argument(form);
    Perturbation p;
    p.worker = parse_count(item.substr(0, at), form);
    p.step = parse_count(item.substr(at + 1, colon == std::string::npos ? std::string::npos : colon - at - 1), form);
    if (colon != std::string::npos) {
      p.tensor = item.substr(colon + 1);
      if (p.tensor.empty()) throw std::invalid_argument(form);
    }
    out.push_back(p);
  }
  return out;
}

std::vector<SpeedChange> parse_speed_schedule(const std::string& text) {
  const std::string form = "faults.speed_schedule = '" + text +
                           "': expected a comma list of 'step:worker=factor' with factor > 0, e.g. '0:1=3, 500:1=1'";
  std::vector<SpeedChange> out;
  for (const std::string& item : split_list(text)) {
    const size_t colon = item.find(':'), eq = item.find('=');
    if (colon == std::string::npos || eq == std::string::npos || eq < colon) throw std::invalid_argument(form);
    SpeedChange s;
    s.step = parse_count(item.substr(0, colon), form);
    s.worker = parse_count(item.substr(colon + 1, eq - colon - 1), form);
    size_t used = 0;
    try {
      s.factor = std::stod(item.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() - eq - 1 || !(s.factor > 0) || !std::isfinite(s.factor))
      throw std::invalid_argument(form);
    out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const SpeedChange& a, const SpeedChange& b) { return a.step < b.step; });
  return out;
}

}  // namespace atl
