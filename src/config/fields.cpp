// The one list of config fields (visit_fields): each key's dotted name, its
// struct member (whose initialiser is the default) and its help line. TOML
// parsing, --flags, --help, unknown-key errors and to_toml() all walk it.
// A help line names another area's list of choices by a placeholder
// ({strategies}, {codecs}, {devices}, {collective algorithms}, ...) that describe_fields()
// (src/setup/help.cpp) fills from that area's table: config knows none of them.
#include "atoll/config.h"
#include "util/format.h"

#include <cstdio>
#include <sstream>

namespace atl {
namespace {

FieldRef field(const char* name, int64_t& v, const std::string& help) {
  FieldRef f{name, help};
  f.i = &v;
  return f;
}
FieldRef field(const char* name, double& v, const std::string& help) {
  FieldRef f{name, help};
  f.d = &v;
  return f;
}
FieldRef field(const char* name, bool& v, const std::string& help) {
  FieldRef f{name, help};
  f.b = &v;
  return f;
}
FieldRef field(const char* name, std::string& v, const std::string& help) {
  FieldRef f{name, help};
  f.s = &v;
  return f;
}
FieldRef bool_words(FieldRef f) {
  f.bool_words = true;
  return f;
}

std::string quote(const std::string& s) {
  std::ostringstream o;
  o << '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      o << '\\' << c;
    } else if (u < 0x20 || u == 0x7f) {  // TOML forbids raw control characters in strings
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04X", unsigned(u));
      o << buf;
    } else {
      o << c;
    }
  }
  o << '"';
  return o.str();
}

}  // namespace

std::string FieldRef::type_name() const {
  if (i) return "int";
  if (d) return "float";
  if (b) return "bool";
  return "string";
}

std::string FieldRef::value_string() const {
  if (i) return std::to_string(*i);
  if (d) return format_double_exact(*d);
  if (b) return *b ? "true" : "false";
  return quote(*s);
}

void visit_fields(Config& c, const std::function<void(FieldRef&)>& fn) {
  FieldRef fields[] = {
      field("run.name", c.run.name, "run folder name under run.out_dir"),
      field("run.out_dir", c.run.out_dir, "parent folder of run folders"),
      field("run.seed", c.run.seed, "seed for initialisation, data order and shared randomness"),
      field("run.overwrite", c.run.overwrite, "replace an existing run folder of the same name"),
      field("run.progress", c.run.progress, "live progress line when stdout is a terminal"),
      field("run.threads", c.run.threads, "intra-op threads in total (0 = all cores)"),
      field("run.checkpoint_every", c.run.checkpoint_every,
            "K: write a checkpoint every K steps (0 = only when stopped early by a signal or run.stop_at)"),
      field("run.keep_checkpoints", c.run.keep_checkpoints, "newest checkpoints kept in <run>/checkpoints"),
      bool_words(field("run.resume", c.run.resume,
                       "false | true | auto: continue <out_dir>/<name> from its newest complete checkpoint (same "
                       "config required); auto: when possible, else start again")),
      field("run.stop_at", c.run.stop_at,
            "stop after this step as on SIGTERM: checkpoint and exit, to resume later (0 = run to the end)"),
      field("run.divergence_check", c.run.divergence_check,
            "auto (real runs) | on | off: after each sync the ranks compare a SHA-256 of each of theta_g's tensors "
            "and stop at a mismatch, naming step and tensor (not with streaming.eager, whose workers keep their own "
            "theta_g)"),
      field("run.peak_window_steps", c.run.peak_window_steps,
            "W: the ledger's peak is the most bytes a worker sends within any W consecutive steps (>= 1)"),

      field("data.dataset", c.data.dataset,
            "brown | text | bin | mnist | npy (text: a folder made by `atoll prepare`, tokenizer chosen there; "
            "npy: data.dir holds train_inputs.npy, train_targets.npy, val_inputs.npy, val_targets.npy)"),
      field("data.dir", c.data.dir, "prepared data folder (\"\" = <data.data_root>/<data.dataset>)"),
      field("data.data_root", c.data.data_root, "where scripts/setup prepares the shipped data"),
      field("data.vocab_size", c.data.vocab_size,
            "vocabulary size: bin data sets without meta.json, and npy data for model.kind = gpt"),
      field("data.shard", c.data.shard, "iid | noniid: how workers split the training data"),

      field("model.kind", c.model.kind,
            "gpt | mlp | cnn | torchscript (mlp and cnn need image data: mnist or npy; torchscript: model.path)"),
      field("model.n_layer", c.model.n_layer, "GPT transformer blocks"),
      field("model.n_head", c.model.n_head, "GPT attention heads (must divide n_embd)"),
      field("model.n_embd", c.model.n_embd, "GPT embedding width C"),
      field("model.block_size", c.model.block_size, "GPT context length T in tokens"),
      field("model.dropout", c.model.dropout, "dropout probability in [0, 1)"),
      field("model.bias", c.model.bias, "biases in Linear and LayerNorm layers"),
      field("model.mlp_hidden", c.model.mlp_hidden, "MLP hidden width (model.kind = mlp)"),
      field("model.path", c.model.path,
            "torchscript: the module file, saved with torch.jit.script(m).save(path) (docs/PYTORCH.md)"),
      field("model.loss", c.model.loss,
            "torchscript: auto | cross_entropy | mse: how forward(inputs)'s output is scored (auto: the "
            "module's own loss if forward takes (inputs, targets), else cross_entropy)"),
      field("model.flops_per_sample", c.model.flops_per_sample,
            "torchscript: training FLOPs (forward + backward) of one example, for network.compute_time = flops "
            "and the FLOP/s figures (0 = count them: 3 x the products of one forward pass)"),
      field("model.reinit", c.model.reinit,
            "torchscript: redraw the saved weights from run.seed (matrices uniform +-1/sqrt(fan_in), vectors kept)"),

      field("optim.name", c.optim.name,
            "adamw | muon (MuLoCo: Muon for matrices, AdamW for the rest) | sgd: inner optimizer"),
      field("optim.lr", c.optim.lr, "inner AdamW peak learning rate lr_in"),
      field("optim.min_lr", c.optim.min_lr, "learning rate at the end of the cosine decay"),
      field("optim.warmup_steps", c.optim.warmup_steps, "linear warm-up steps"),
      field("optim.beta1", c.optim.beta1, "AdamW beta1"),
      field("optim.beta2", c.optim.beta2, "AdamW beta2"),
      field("optim.weight_decay", c.optim.weight_decay, "AdamW decoupled weight decay (matrices only)"),
      field("optim.grad_clip", c.optim.grad_clip, "global gradient-norm clip (0 = off)"),
      field("optim.schedule", c.optim.schedule, "cosine | constant (after warm-up)"),
      field("optim.muon_momentum", c.optim.muon_momentum, "mu: Muon's momentum (Muon 0.95)"),
      field("optim.muon_nesterov", c.optim.muon_nesterov, "Muon's Nesterov momentum (Muon: true)"),
      field("optim.muon_ns_steps", c.optim.muon_ns_steps, "Newton-Schulz iterations of Muon's orthogonalisation (5)"),
      field("optim.muon_exclude", c.optim.muon_exclude,
            "regular expression over parameter names: matching matrices stay on AdamW (embeddings, output head)"),

      field("train.steps", c.train.steps, "inner steps per worker"),
      field("train.batch_size", c.train.batch_size, "sequences (images) per worker per step"),
      field("train.eval_every", c.train.eval_every, "evaluate every this many steps (0 = end only)"),
      field("train.eval_batches", c.train.eval_batches, "fixed validation batches per evaluation"),
      field("train.final_eval", c.train.final_eval,
            "full | sample: the final evaluation covers the whole validation split (full) or the "
            "eval_batches sample"),
      field("train.eval_batch_size", c.train.eval_batch_size,
            "sequences (images) per batch of the full evaluation; memory grows with it"),
      field("train.log_every", c.train.log_every, "write a metrics line every this many steps"),
      field("train.precision", c.train.precision,
            "fp32 | bf16 | auto: bf16 runs the training forward's matrix products in bf16 (fp32 master weights, "
            "optimizer state, reductions and evaluation) and needs an AVX-512 CPU; auto picks bf16 where the CPU "
            "multiplies bf16 natively (AVX-512 BF16, AMX) and fp32 elsewhere, shown at start"),
      field("train.gemm", c.train.gemm,
            "openblas | onednn | auto: the library that multiplies fp32 matrices (LibTorch sends them to OpenBLAS; "
            "oneDNN's sgemm is faster at most small-GPT shapes, `atoll bench --only=compute` shows each); auto times "
            "each product shape of a training step in both at start and sends it to the faster, keeping the choice "
            "in the start event and checkpoints; the two differ in the last bits, so a run keeps its choice"),

      field("strategy.name", c.strategy.name, "{strategies}"),
      field("strategy.workers", c.strategy.workers, "N: simulated workers"),
      field("strategy.eval_model", c.strategy.eval_model,
            "auto | global | average | worker0: which parameters are evaluated"),
      field("strategy.eval_worker0", c.strategy.eval_worker0,
            "also evaluate worker 0 alone (methods evaluated on the average)"),
      field("strategy.topology", c.strategy.topology,
            "{topologies}: who averages with whom (sparta's coordinates, localsgd's parameters)"),
      field("strategy.correlation_every", c.strategy.correlation_every,
            "log the workers' mean pairwise parameter correlation every this many steps (0 = off)"),

      field("diloco.inner_steps", c.diloco.inner_steps,
            "H: inner steps between syncs (DiLoCo paper: 500); also Local SGD's H"),
      field("diloco.outer_lr", c.diloco.outer_lr, "lr_out: outer learning rate (paper: 0.7)"),
      field("diloco.outer_momentum", c.diloco.outer_momentum, "mu: outer momentum (paper: 0.9)"),
      field("diloco.nesterov", c.diloco.nesterov, "Nesterov outer momentum (false = heavy ball)"),
      field("diloco.outer_optimizer", c.diloco.outer_optimizer,
            "sgd (momentum SGD, the paper's Nesterov) | adam (the paper's ablation: outer_lr, beta1 = outer_momentum)"),
      field("diloco.outer_beta2", c.diloco.outer_beta2, "adam outer optimizer only: second-moment decay"),
      field("diloco.outer_eps", c.diloco.outer_eps, "adam outer optimizer only: epsilon"),
      field("diloco.ddp_warmup_steps", c.diloco.ddp_warmup_steps,
            "T_w: DDP steps before local training starts (post-local SGD; diloco, sparta_diloco, streaming)"),
      field("diloco.warmup_sync", c.diloco.warmup_sync,
            "gradients (the warm-up is DDP) | none (local steps; each worker starts from its own model, as the "
            "PALSGD authors' DiLoCo baseline)"),
      field("diloco.codec", c.diloco.codec, "pseudo-gradient codec: {codecs}"),
      field("diloco.aggregator", c.diloco.aggregator,
            "mean | median | trimmed_mean: how the workers' pseudo-gradients are combined (robust options gather all)"),
      field("diloco.trim_fraction", c.diloco.trim_fraction,
            "trimmed_mean: share of workers cut from each end of every coordinate, in [0, 0.5)"),
      field("diloco.clip_norm", c.diloco.clip_norm,
            "clip each worker's pseudo-gradient to this L2 norm before combining (0 = off)"),
      field("diloco.outer_steps_per_sync", c.diloco.outer_steps_per_sync,
            "K: outer steps per sync, 1..1000: one on the pseudo-gradient, K-1 on zero (momentum only; "
            "PALSGD authors' code: 16); outer sgd only"),
      field("diloco.charge_extra_syncs", c.diloco.charge_extra_syncs,
            "with K > 1, also all-reduce the K-1 zero pseudo-gradients as the authors' code does (tag "
            "pseudo-grad-extra)"),

      field("ddp.codec", c.ddp.codec, "gradient codec: {codecs}"),
      field("ddp.overlap", c.ddp.overlap,
            "all-reduce the gradients in buckets overlapped with the backward pass (PyTorch DDP); false: "
            "one all-reduce after it"),
      field("ddp.bucket_mb", c.ddp.bucket_mb, "overlap: bucket cap in MiB of gradient (PyTorch bucket_cap_mb 25)"),
      field("ddp.first_bucket_mb", c.ddp.first_bucket_mb,
            "overlap: cap of the first bucket (last layers) in MiB (PyTorch 1)"),

      field("codec.block", c.codec.block, "elements per fp32 scale in the block codecs (int8, fp8, fp4, 2bit, sign)"),
      field("codec.topk_density", c.codec.topk_density, "fraction of entries the topk codec keeps"),
      field("codec.error_feedback", c.codec.error_feedback,
            "codecs that need it (topk, topk-chunk*, 2bit, sign): add what was not sent to the next payload"),
      field("codec.requantize_result", c.codec.requantize_result,
            "dense lossy codecs (fp16 to fp4, 2bit, sign): re-encode the reduced mean as a low-precision ring delivers "
            "it (false: exact sum)"),
      field("codec.topk_scope", c.codec.topk_scope,
            "tensor (k largest of each tensor, DiLoCo's ablation; topk-chunk*: chunks within each tensor) | global (of "
            "the whole flat payload)"),
      field("codec.chunk", c.codec.chunk,
            "C: topk-chunk codecs cut each tensor into chunks of C entries (SparseLoCo 4096)"),
      field("codec.chunk_topk", c.codec.chunk_topk,
            "k: topk-chunk codecs send the k largest |x| of each full chunk (SparseLoCo 64 = 1.56%)"),

      field("palsgd.p", c.palsgd.p, "p: probability of a pseudo-synchronisation step (paper 0.2)"),
      field("palsgd.eta", c.palsgd.eta, "eta: pull toward the stored global model (paper 1)"),
      field("palsgd.inner_steps", c.palsgd.inner_steps, "H: steps between outer syncs (paper 32)"),
      field("palsgd.ddp_warmup_steps", c.palsgd.ddp_warmup_steps, "T_w: DDP warm-up steps (paper 32)"),
      field("palsgd.outer_lr", c.palsgd.outer_lr, "outer Nesterov learning rate (paper 0.1)"),
      field("palsgd.outer_momentum", c.palsgd.outer_momentum, "outer momentum (paper 0.9)"),
      field("palsgd.outer_steps_per_sync", c.palsgd.outer_steps_per_sync,
            "K: outer steps per sync, 1..1000: one on the pseudo-gradient, K-1 on zero (authors' run: 16)"),
      field("palsgd.charge_extra_syncs", c.palsgd.charge_extra_syncs,
            "with K > 1, also all-reduce the K-1 zero pseudo-gradients as the authors' code does"),
      field("palsgd.coins", c.palsgd.coins,
            "private (coins from (seed, worker)) | shared (from the seed alone, as the authors' run: all "
            "workers skip the same steps)"),

      field("demo.beta", c.demo.beta, "beta: momentum decay (paper 0.999)"),
      field("demo.topk", c.demo.topk, "k: DCT coefficients sent per block (paper 32)"),
      field("demo.chunk", c.demo.chunk, "c: DCT block side limit (paper 64)"),
      field("demo.index_dtype", c.demo.index_dtype, "int16 | int64: index width on the wire (reference int64)"),
      field("demo.sign", c.demo.sign, "sign-SGD step (false: step on the decoded momentum)"),
      field("demo.weight_decay", c.demo.weight_decay, "decoupled weight decay (paper 0)"),

      field("streaming.fragment_blocks", c.streaming.fragment_blocks, "transformer blocks per fragment (paper 3)"),
      field("streaming.pattern", c.streaming.pattern, "strided | sequential: which blocks form a fragment"),
      field("streaming.block_pattern", c.streaming.block_pattern,
            "regular expression over parameter names whose first group is the transformer block index"),
      field("streaming.overlap", c.streaming.overlap, "tau: inner steps a fragment's sync overlaps (paper 1)"),
      field("streaming.alpha", c.streaming.alpha, "alpha: merge weight of the local values (paper 0.5)"),
      field("streaming.codec", c.streaming.codec, "outer-gradient codec (paper fp4): {codecs}"),
      field("streaming.eager", c.streaming.eager,
            "eager updates (arXiv 2502.12996): overlap a fragment's whole all-reduce with the next round, stepping "
            "with the local outer gradient as a stand-in for the one in flight"),

      field("sparseloco.outer_lr", c.sparseloco.outer_lr,
            "lr_out: outer learning rate; no outer momentum (SparseLoCo's run 1.0)"),
      field("sparseloco.error_decay", c.sparseloco.error_decay,
            "beta: error-feedback decay, e <- beta * e + Delta before top-k (paper 0.95)"),
      field("sparseloco.codec", c.sparseloco.codec,
            "topk-chunk-2bit (paper: k of each C-entry chunk in 2 bits, codec.chunk_topk / codec.chunk) | "
            "topk-chunk (fp32 values)"),

      field("desloc.param_period", c.desloc.param_period,
            "K_x: steps between parameter averages (DES-LOC sweeps it; 32 here)"),
      field("desloc.first_moment_factor", c.desloc.first_moment_factor,
            "K_u / K_x: Adam's first moments averaged every this many K_x (paper 3; 0 = never)"),
      field("desloc.second_moment_factor", c.desloc.second_moment_factor,
            "K_v / K_x: Adam's second moments averaged every this many K_x (paper 6; 0 = never)"),

      field("sparta.p", c.sparta.p, "p: fraction of parameters averaged per exchange (paper 0.005)"),
      field("sparta.selector", c.sparta.selector,
            "random | partitioned | sequential | layerwise: which entries each exchange averages"),
      field("sparta.interval", c.sparta.interval, "k: exchange every k steps"),
      field("sparta.delay", c.sparta.delay, "d: averages computed at step t are applied at t + d (async)"),
      field("sparta.apply", c.sparta.apply, "overwrite | delta: write the average, or add (average - values sent)"),
      field("sparta.fault_rate", c.sparta.fault_rate, "probability an exchange is skipped (faults)"),
      field("sparta.p_schedule", c.sparta.p_schedule,
            "constant | cosine: p high early, cosine-decayed to the floor, same mean p"),
      field("sparta.p_min_factor", c.sparta.p_min_factor, "cosine p schedule floor as a fraction of p"),
      field("sparta.codec", c.sparta.codec, "sparse values' codec: {dense codecs}"),

      field("noloco.inner_steps", c.noloco.inner_steps, "H: inner steps between group syncs (paper 50)"),
      field("noloco.outer_lr", c.noloco.outer_lr, "a: outer learning rate (paper 0.7)"),
      field("noloco.outer_momentum", c.noloco.outer_momentum, "beta: outer momentum (paper 0.5)"),
      field("noloco.group_size", c.noloco.group_size, "G: workers per averaging group (paper 2)"),

      field("network.bandwidth", c.network.bandwidth,
            "per-link bandwidth beta, e.g. 100Mbit/s, 25GB/s (the upload when network.download_bandwidth differs)"),
      field("network.latency", c.network.latency, "per-message latency alpha, e.g. 30ms"),
      field("network.jitter", c.network.jitter, "extra latency drawn uniformly in [0, jitter)"),
      field("network.algorithm", c.network.algorithm,
            "{collective algorithms}: all-reduce algorithm ({collective algorithm help})"),
      field("network.server_bandwidth", c.network.server_bandwidth,
            "ps (relay) only: the relay's bandwidth each way (\"\" = network.bandwidth)"),
      field("network.worker_bandwidth", c.network.worker_bandwidth,
            "per-worker bandwidth overrides, comma list (empty entry = default)"),
      field("network.worker_latency", c.network.worker_latency, "per-worker latency overrides, comma list"),
      field("network.download_bandwidth", c.network.download_bandwidth,
            "every link's download bandwidth (\"\" = network.bandwidth, symmetric), e.g. 500Mbit/s with "
            "network.bandwidth = 110Mbit/s up; a ring is bound by the slowest uplink, a relay's download by the "
            "slowest downlink"),
      field("network.worker_download_bandwidth", c.network.worker_download_bandwidth,
            "per-worker download overrides, comma list (empty entry = network.download_bandwidth)"),
      field("network.compute_time", c.network.compute_time,
            "flops | measured: a step's compute time modelled from its FLOPs at the device's rate (the same on a "
            "busy or a quiet machine) or measured on this machine"),
      field("network.device", c.network.device,
            "flops mode: the device whose peak rate steps are charged at: {devices}"),
      field("network.device_flops", c.network.device_flops,
            "flops mode: peak FLOP/s overriding network.device's (0 = the device's)"),
      field("network.mfu", c.network.mfu, "flops mode: model FLOPs utilisation in (0, 1]"),
      field("network.speed_factors", c.network.speed_factors,
            "per-worker compute-time multipliers, comma list (stragglers > 1)"),
      field("network.outages", c.network.outages,
            "link outages in simulated time, 'worker@from-to' list (e.g. 1@30s-60s): ops wait for the link"),
      field("network.intra_bandwidth", c.network.intra_bandwidth,
            "beta_in: bandwidth of every link inside an island (islands.devices > 1)"),
      field("network.intra_latency", c.network.intra_latency, "alpha_in: per-message latency inside an island"),
      field("network.island_bandwidth", c.network.island_bandwidth,
            "per-island wide-area bandwidth overrides, comma list (empty entry = network.bandwidth)"),
      field("network.island_latency", c.network.island_latency,
            "per-island wide-area latency overrides, comma list (empty entry = network.latency)"),
      field("network.island_download_bandwidth", c.network.island_download_bandwidth,
            "per-island wide-area download overrides, comma list (empty entry = network.download_bandwidth)"),
      field("network.island_uplink", c.network.island_uplink,
            "per_device | shared: every device of an island has its own wide-area link, or they share one "
            "(flat and sharded exchanges then get bandwidth / D per device)"),
      field("islands.count", c.islands.count, "I: islands (0 = strategy.workers / islands.devices)"),
      field("islands.devices", c.islands.devices,
            "D: devices per island, data-parallel every step; the strategy runs between islands (0 = strategy.workers "
            "/ islands.count; both 0 = 1 device per island)"),
      field("islands.exchange", c.islands.exchange,
            "{island exchanges}: how a cross-island payload travels ({island exchange help})"),
      field("faults.absent", c.faults.absent,
            "workers away for step windows, 'worker@from-to' list (to empty = the end); pseudo-gradient methods"),
      field("faults.drop_prob", c.faults.drop_prob,
            "q: probability that a worker's pseudo-gradient is lost at a sync (DiLoCo's async ablation)"),
      field("faults.corrupt", c.faults.corrupt,
            "workers sending corrupt pseudo-gradients, 'worker@from-to:kind' (kind nan | inf | scale)"),
      field("faults.perturb_global", c.faults.perturb_global,
            "'worker@step[:tensor]': that worker adds 1e-3 to its theta_g after step (tests the divergence check)"),
      field("faults.speed_schedule", c.faults.speed_schedule,
            "stragglers over time, 'step:worker=factor' list (e.g. 0:1=3, 500:1=1)"),
  };
  for (FieldRef& f : fields) fn(f);
}

}  // namespace atl
