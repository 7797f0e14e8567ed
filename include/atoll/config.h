// Run configuration: plain structs with documented defaults.
//
// The struct initialisers below are the one set of defaults: what Config{}
// holds is what `atoll train` with no config file runs (a small
// character-level GPT on the Brown corpus, about four minutes on two cores),
// what `--help` prints and what a test starts from.
//
// Every field is declared once, in `visit_fields()` (fields.cpp), with its
// dotted name and a one-line meaning.
// That single list drives TOML parsing, `--section.key=value` overrides,
// `--help`, validation of unknown keys and writing the resolved config, so a
// new field needs exactly one line there.
//
// Thread-safety: plain values; copy freely.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace atl {

// Thrown for bad configuration; `what()` lists every problem found.
class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunConfig {
  std::string name = "default";  // run folder is <out_dir>/<name>
  std::string out_dir = "runs";
  int64_t seed = 1337;
  bool overwrite = false;        // replace an existing run folder
  bool progress = true;          // live progress line when stdout is a terminal
  int64_t threads = 0;           // intra-op threads in total; 0 = all cores
  int64_t checkpoint_every = 0;  // K: checkpoint every K steps (0 = only when stopped early)
  int64_t keep_checkpoints = 3;  // newest checkpoints kept in <run>/checkpoints
  std::string resume = "false";  // false | true | auto: continue <out_dir>/<name> from its newest
                                 // complete checkpoint (auto: when possible, else start again)
  int64_t stop_at = 0;           // stop after this step as on SIGTERM (checkpoint, exit); 0 = never
  // After every sync of a method with a global model, the ranks compare a
  // SHA-256 of each of theta_g's tensors and stop at the first mismatch,
  // naming the step and the tensor (PCCL's check). auto: in real runs.
  std::string divergence_check = "auto";  // auto | on | off
  // The ledger's peak: the most bytes a worker sends within any this many
  // consecutive steps (summary's peak_sent_bytes_per_worker; Streaming
  // DiLoCo's "lower peak bandwidth" is this at 1 step).
  int64_t peak_window_steps = 1;
};

struct DataConfig {
  std::string dataset = "brown";  // brown | text | bin | mnist | npy; the tokenizer is chosen by `atoll prepare`;
                                  // npy: data.dir holds {train,val}_{inputs,targets}.npy (docs/PYTORCH.md)
  std::string dir = "";           // prepared data folder; "" = <data_root>/<dataset>
  std::string data_root = "data";
  int64_t vocab_size = 0;     // bin data sets, and npy data for model.kind = gpt: vocabulary size
  std::string shard = "iid";  // iid | noniid: how workers split the training data
};

struct ModelConfig {
  std::string kind = "gpt";  // gpt | mlp | cnn | torchscript
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 192;
  int64_t block_size = 128;  // context length in tokens
  double dropout = 0.0;
  bool bias = false;         // biases in Linear and LayerNorm (nanoGPT's `bias`)
  int64_t mlp_hidden = 256;  // mlp only: hidden width
  // torchscript: a module saved with torch.jit.script(m).save(path)
  // (docs/PYTORCH.md has the contract).
  std::string path = "";        // the TorchScript file
  std::string loss = "auto";    // auto | cross_entropy | mse: how forward(inputs)'s output is scored;
                                // auto = the module's own loss if forward takes (inputs, targets),
                                // else cross_entropy
  double flops_per_sample = 0;  // training FLOPs (forward + backward) of one example, for
                                // network.compute_time = flops; 0 = counted at start (3 x the
                                // products of one forward pass, src/model/flop_count.h)
  bool reinit = false;          // redraw the saved weights from run.seed (matrices: PyTorch's
                                // uniform +-1/sqrt(fan_in)); false: the saved weights are the start
};

struct OptimConfig {
  std::string name = "adamw";  // adamw | muon (MuLoCo's inner optimizer) | sgd (plain SGD, used by equivalence tests)
  double lr = 2e-3;            // inner AdamW peak learning rate
  double min_lr = 2e-4;        // cosine floor
  int64_t warmup_steps = 50;   // linear warm-up steps
  double beta1 = 0.9;
  double beta2 = 0.95;
  double weight_decay = 0.1;        // applied to matrices (dim >= 2) only
  double grad_clip = 1.0;           // global-norm clip; 0 disables
  std::string schedule = "cosine";  // cosine | constant
  // Muon (Jordan et al. 2024; MuLoCo, arXiv 2505.23725; ALGORITHMS.md 8.8): for each
  // matrix, m <- mu m + g, O = NewtonSchulz5(g + mu m (Nesterov) or m), update
  // 0.2 sqrt(max(rows, cols)) O (Moonlight's scale, so lr and weight decay are AdamW's);
  // AdamW (above) for vectors and for the parameters muon_exclude names.
  double muon_momentum = 0.95;                      // mu (Muon 0.95)
  bool muon_nesterov = true;                        // Nesterov momentum (Muon's default)
  int64_t muon_ns_steps = 5;                        // Newton-Schulz iterations (Muon 5)
  std::string muon_exclude = "wte|wpe|embed|head";  // regular expression over parameter names kept on AdamW
};

struct TrainConfig {
  int64_t steps = 450;        // inner steps per worker
  int64_t batch_size = 32;    // sequences (or images) per worker per step
  int64_t eval_every = 100;   // 0 = only at the end
  int64_t eval_batches = 20;  // fixed validation batches per evaluation
  // The evaluation at the end: "full" = every non-overlapping block_size
  // window of the validation split (the whole test split for MNIST), in
  // fixed order; "sample" = the same eval_batches batches as the others.
  std::string final_eval = "full";
  int64_t eval_batch_size = 256;  // sequences (images) per batch of the full evaluation
  int64_t log_every = 10;         // metrics line every this many steps
  // Training forward pass: "fp32", or "bf16" = matrix products in bf16 with
  // fp32 master weights, optimizer state, reductions and evaluation
  // (autocast-style mixed precision; CPUs with AVX-512 only); "auto" = bf16
  // where the CPU has native bf16 products (AVX-512 BF16, AMX), else fp32.
  std::string precision = "fp32";
  // Which library multiplies fp32 matrices (training, evaluation, attention):
  // "openblas" (LibTorch's own choice) or "onednn" (oneDNN's sgemm, faster
  // at most of a small GPT's shapes; the last bits of every product differ).
  std::string gemm = "openblas";
};

// The most workers a run may have. Simulated workers are threads of one
// process, each with its own model, optimizer and method state; what bounds
// them is memory (docs/MEASUREMENTS.md has the figures for 256 and 1024).
inline constexpr int64_t kMaxWorkers = 1024;

// Which method trains the model and on how many simulated workers.
struct StrategyConfig {
  std::string name = "single";      // single | ddp | localsgd | diloco | sparta | sparta_diloco | noloco
                                    // | palsgd | demo | streaming
  int64_t workers = 1;              // N: simulated workers (threads)
  std::string eval_model = "auto";  // auto | global | average | worker0
  bool eval_worker0 = false;        // also report worker 0's loss (average-evaluated methods)
  std::string topology = "global";  // global | ring | gossip: who averages with whom (sparta, localsgd)
  int64_t correlation_every = 50;   // log the mean pairwise Pearson correlation of workers (0 = off)
};

// DiLoCo (Douillard et al. 2023) and Local SGD / FedAvg (outer SGD lr 1, mu 0).
struct DiLoCoConfig {
  int64_t inner_steps = 500;              // H: inner steps between synchronisations (paper 500)
  double outer_lr = 0.7;                  // lr_out: outer learning rate
  double outer_momentum = 0.9;            // mu: outer momentum
  bool nesterov = true;                   // Nesterov (PyTorch SGD nesterov=True) vs heavy ball
  std::string outer_optimizer = "sgd";    // sgd (momentum SGD; paper: Nesterov) | adam (paper's ablation, Table 5)
  double outer_beta2 = 0.999;             // adam outer only: second-moment decay (beta1 = outer_momentum)
  double outer_eps = 1e-8;                // adam outer only: epsilon
  int64_t ddp_warmup_steps = 0;           // T_w: DDP steps before local training (post-local SGD; PALSGD's baseline),
                                          // for diloco, sparta_diloco and streaming (palsgd: palsgd.ddp_warmup_steps)
  std::string warmup_sync = "gradients";  // the warm-up's steps: gradients (averaged, DDP) | none (local steps, each
                                          // worker's theta_g its own model: the PALSGD authors' DiLoCo baseline)
  std::string codec = "fp32";             // pseudo-gradient payload codec (see [codec])
  // Robust aggregation of the workers' pseudo-gradients (with [faults]).
  std::string aggregator = "mean";  // mean | median | trimmed_mean (coordinate-wise over contributing workers)
  double trim_fraction = 0.25;      // trimmed_mean: share of workers cut from each end per coordinate
  double clip_norm = 0.0;           // each worker's pseudo-gradient clipped to this L2 norm first (0 = off)
  // K: outer steps per sync (1..1000). The first on the averaged pseudo-gradient,
  // the other K - 1 on a zero one, which only apply momentum: what PALSGD's
  // authors' DiLoCo-family code does with gradient accumulation (K = 16 in their
  // GPT-Neo run; ALGORITHMS.md 5(d)). Outer sgd only.
  int64_t outer_steps_per_sync = 1;
  bool charge_extra_syncs = false;  // with K > 1: send the K - 1 zero payloads too, as that code all-reduces
                                    // them (ledger tag "pseudo-grad-extra"); false: only the step's math
};

// Fault injection and churn (simulated and real runs). Windows are
// "worker@from-to" in steps, comma separated; "to" empty = to the end.
// absent/drop_prob/corrupt act on pseudo-gradient syncs (diloco,
// sparta_diloco, palsgd); the speed schedule on every method.
struct FaultConfig {
  std::string absent = "";          // workers away, e.g. "2@100-300" (DiLoCo's adaptive-compute ablation);
                                    // an absent worker computes and sends nothing; a joiner gets the global model
  double drop_prob = 0.0;           // q: each worker's pseudo-gradient is lost with probability q per sync
                                    // (DiLoCo's asynchronous-communication ablation)
  std::string corrupt = "";         // "worker@from-to:kind", kind nan | inf | scale (x1e6): a bad worker's payload
  std::string speed_schedule = "";  // stragglers over time: "step:worker=factor", e.g. "0:1=3, 500:1=1"
  // "worker@step[:tensor]", comma list: after step's update that worker adds 1e-3 to the first entry of
  // its theta_g's tensor (default its first): a rank whose shared state went wrong, for the divergence check
  std::string perturb_global = "";
};

// One window of a fault schedule.
struct FaultWindow {
  int64_t worker = 0;
  int64_t from = 0;
  int64_t to = -1;   // exclusive; -1 = to the end
  std::string kind;  // corrupt only
  bool contains(int64_t step) const { return step >= from && (to < 0 || step < to); }
};
// Parses faults.absent / faults.corrupt (`with_kind`); throws std::invalid_argument
// naming `key` and the accepted form.
std::vector<FaultWindow> parse_fault_windows(const std::string& text, const std::string& key, bool with_kind);
struct SpeedChange {
  int64_t step = 0, worker = 0;
  double factor = 1;
};
// faults.speed_schedule, sorted by step; throws std::invalid_argument.
std::vector<SpeedChange> parse_speed_schedule(const std::string& text);
struct Perturbation {
  int64_t worker = 0, step = 0;
  std::string tensor;  // a parameter name; "" = the first
};
// faults.perturb_global; throws std::invalid_argument naming the accepted form.
std::vector<Perturbation> parse_perturbations(const std::string& text);

// DDP's gradient all-reduce (also the DDP warm-up of diloco.ddp_warmup_steps
// and PALSGD). With overlap, the all-reduce goes in buckets that start as the
// backward pass produces them, as PyTorch's DDP does (ALGORITHMS.md 7.3);
// only the clock changes, never the values.
struct DdpConfig {
  std::string codec = "fp32";  // gradient payload codec (see [codec])
  bool overlap = true;         // bucketed all-reduce overlapped with the backward pass; false: one
                               // all-reduce after the backward pass, all of it charged
  double bucket_mb = 25;       // bucket cap in MiB of gradient (PyTorch's bucket_cap_mb, default 25)
  double first_bucket_mb = 1;  // cap of the first bucket (the last layers' gradients), MiB: PyTorch's
                               // 1 MiB first bucket, so that communication starts early in the backward
};

// Payload compression shared by every strategy's `codec` (ALGORITHMS.md 8.5).
struct CodecConfig {
  int64_t block = 128;         // elements per fp32 scale in the block codecs (int8, fp8, fp4, 2bit, sign)
  double topk_density = 0.01;  // fraction of entries the topk codec keeps
  bool error_feedback =
      true;  // codecs that need it (topk, topk-chunk*, 2bit, sign): carry what was not sent into the next payload
  bool requantize_result = true;      // quantizing codecs (fp16, bf16, int8, fp8, fp4, 2bit, sign): the reduced mean is
                                      // encoded and decoded once more, as a low-precision ring delivers it; false: the
                                      // decoded payloads are averaged exactly (optimistic). topk: no effect
  std::string topk_scope = "tensor";  // tensor: k_t = max(1, round(density * n_t)) largest of each tensor (DiLoCo's
                                      // pruning ablation; topk-chunk*: chunks within each tensor) | global: k
                                      // largest of the whole flat payload (topk-chunk*: chunks of it)
  // topk-chunk, topk-chunk-2bit (SparseLoCo, arXiv 2508.15706): each tensor cut into
  // chunks of C entries, the k largest |x| of each sent with their position in the chunk.
  int64_t chunk = 4096;     // C: entries per chunk (SparseLoCo 4,096 = one 64 x 64 block)
  int64_t chunk_topk = 64;  // k: entries sent per full chunk (SparseLoCo 64 of 4,096 = 1.56%)
};

// PALSGD (Naganuma et al., TMLR 2025); ALGORITHMS.md 5.
struct PalsgdConfig {
  double p = 0.2;                 // p: probability of a pseudo-synchronisation step (prob_no_grad)
  double eta = 1.0;               // eta: pull strength toward the stored global model
  int64_t inner_steps = 32;       // H: steps (both kinds) between outer syncs
  int64_t ddp_warmup_steps = 32;  // T_w: DDP steps before local training
  double outer_lr = 0.1;          // outer Nesterov learning rate
  double outer_momentum = 0.9;    // outer momentum
  // K: outer steps per sync, as diloco.outer_steps_per_sync (1 = the paper's rule;
  // the authors' GPT-Neo run takes 16: one on the pseudo-gradient, 15 on zero).
  int64_t outer_steps_per_sync = 1;
  bool charge_extra_syncs = false;  // as diloco.charge_extra_syncs
  // Whose coin flips pick the pseudo-synchronisation steps: private ((run seed,
  // worker): workers skip different steps) | shared ((run seed) alone: the
  // authors seed every rank alike, so all workers skip the same steps).
  std::string coins = "private";
};

// DeMo (Peng, Quesnelle, Kingma 2024); ALGORITHMS.md 6.
struct DemoConfig {
  double beta = 0.999;                // beta: momentum decay (compression_decay)
  int64_t topk = 32;                  // k: DCT coefficients sent per block (compression_topk)
  int64_t chunk = 64;                 // c: DCT block side limit (compression_chunk)
  std::string index_dtype = "int16";  // int16 (fits any block <= 32768) | int64 (the reference's torch.topk)
  bool sign = true;                   // sign-SGD step (false: plain step on the decoded momentum; for tests)
  double weight_decay = 0.0;          // decoupled weight decay (DeMo configs: 0)
};

// Streaming DiLoCo (Douillard et al. 2025); ALGORITHMS.md 3. H, outer lr and
// momentum come from [diloco].
struct StreamingConfig {
  int64_t fragment_blocks = 3;      // transformer blocks per fragment (paper: 3)
  std::string pattern = "strided";  // strided (block l in fragment l mod F) | sequential
  // Which parameters belong to transformer block l: a regular expression
  // over parameter names whose first group is l. The default matches the
  // built-in GPT ("h3.") and the usual PyTorch names ("transformer.h.3.",
  // "blocks.3.", "layers.3."). Names it does not match go with the blocks
  // next to them (embeddings with the first fragment, the head with the last).
  std::string block_pattern = R"((?:^|\.)(?:h|blocks|layers)\.?(\d+)\.)";
  int64_t overlap = 1;        // tau: inner steps a fragment's all-reduce overlaps (0 = blocking)
  double alpha = 0.5;         // alpha: merge theta_i <- (1 - alpha) theta_g + alpha theta_i
  std::string codec = "fp4";  // outer-gradient payload codec (paper: FP4)
  // Eager updates (Kale et al. 2025, arXiv 2502.12996): a fragment's
  // all-reduce overlaps the whole next round and each worker steps with its
  // own fresh outer gradient in place of the one in flight (streaming.h).
  bool eager = false;
};

// SparseLoCo (Sarfi et al. 2025, arXiv 2508.15706); ALGORITHMS.md 8.7: DiLoCo
// whose pseudo-gradient goes through error feedback and a chunked top-k
// codec, the error-feedback accumulator standing in for the outer momentum.
// H, the warm-up and robust aggregation come from [diloco]; the chunk C and
// the k kept per chunk from [codec] (codec.chunk, codec.chunk_topk).
struct SparseLoCoConfig {
  double outer_lr = 1.0;                  // lr_out: outer learning rate, no momentum (Templar's run: 1.0)
  double error_decay = 0.95;              // beta: error feedback e <- beta * e + Delta (paper 0.95)
  std::string codec = "topk-chunk-2bit";  // topk-chunk-2bit (the paper's 2-bit values) | topk-chunk (fp32 values)
};

// DES-LOC (Iacob et al. 2025, arXiv 2505.22549); ALGORITHMS.md 8.9: local Adam whose
// parameters and moments are averaged across workers each on its own period.
struct DesLocConfig {
  int64_t param_period = 32;         // K_x: steps between parameter averages (the paper sweeps it; 32 here)
  int64_t first_moment_factor = 3;   // K_u / K_x: first moments averaged every 3 K_x (paper); 0 = never
  int64_t second_moment_factor = 6;  // K_v / K_x: second moments averaged every 6 K_x (paper); 0 = never
};

// SPARTA: sparse parameter averaging (Beton et al. 2025); ALGORITHMS.md 4.
struct SpartaConfig {
  double p = 0.005;                     // p: fraction of parameters averaged per exchange (paper 0.005)
  std::string selector = "random";      // random | partitioned | sequential | layerwise: index selector
  int64_t interval = 1;                 // k: exchange every k steps (sparta_interval)
  int64_t delay = 0;                    // d: an average from step t is applied at t + d (async; robust to 10)
  std::string apply = "overwrite";      // overwrite (reference) | delta: theta += avg - sent values
  double fault_rate = 0.0;              // probability that an exchange is skipped by every worker
  std::string p_schedule = "constant";  // constant | cosine: high during warm-up, cosine to the floor, mean p
  double p_min_factor = 0.1;            // p schedule floor p_min = p_min_factor * p (reference 0.1)
  std::string codec = "fp32";           // sparse values' payload codec (see [codec])
};

// NoLoCo (Gensyn 2025); ALGORITHMS.md 8.1: gossip groups, no global collective.
struct NoLoCoConfig {
  int64_t inner_steps = 50;     // H: inner steps between group syncs (paper config 50)
  double outer_lr = 0.7;        // a: outer learning rate
  double outer_momentum = 0.5;  // beta: outer momentum
  int64_t group_size = 2;       // G: workers per averaging group (2 = random pairs)
};

// Network model and simulated clock (ALGORITHMS.md section 7).
struct NetworkConfig {
  std::string bandwidth = "1Gbit/s";  // per-link bandwidth beta; units bit/s or B/s with k/M/G/T
  std::string latency = "0ms";        // per-message latency alpha (s, ms, us)
  std::string jitter = "0ms";         // extra latency, uniform in [0, jitter], seeded per op
  std::string algorithm = "ring";     // ring | tree | ps: all-reduce algorithm
  std::string server_bandwidth = "";  // ps only: the server's link; "" = bandwidth
  std::string worker_bandwidth = "";  // per-worker overrides, comma list (empty entry = default)
  std::string worker_latency = "";    // per-worker overrides, comma list
  // Links that download faster than they upload (home and office lines):
  // bandwidth above is then each link's upload.
  std::string download_bandwidth = "";         // every link's download; "" = bandwidth (symmetric)
  std::string worker_download_bandwidth = "";  // per-worker download overrides, comma list (empty = default)
  // How a step's compute is charged. flops (default): modelled, the step's
  // training FLOPs (6 * params * tokens + attention) over the device's peak
  // rate times mfu, plus each method's own work (DeMo's transforms, outer
  // optimizers) at the same rate: the same run gets the same simulated times
  // on a quiet or a busy machine. measured: this machine's compute time per
  // step (varies with load; for profiling the methods' own cost).
  std::string compute_time = "flops";  // flops | measured
  std::string device = "cpu2";         // flops mode: named device (src/net/devices.cpp)
  double device_flops = 0;             // flops mode: peak FLOP/s overriding the device's (0 = the device's)
  double mfu = 0.4;                    // flops mode: model FLOPs utilisation
  std::string speed_factors = "";      // per-worker compute-time multipliers, comma list (stragglers)
  std::string outages = "";            // link outages in simulated time, "worker@from-to": "1@30s-60s"
                                       // (an op involving that worker starts when its link is back)
  // Islands (with islands.devices > 1): the links inside an island and each
  // island's wide-area link. bandwidth/latency above are the wide-area default.
  std::string intra_bandwidth = "400Gbit/s";  // beta_in: every link inside an island (NVLink/InfiniBand class)
  std::string intra_latency = "0ms";          // alpha_in: per-message latency inside an island
  std::string island_bandwidth = "";  // per-island wide-area bandwidth overrides, comma list (empty = bandwidth)
  std::string island_latency = "";    // per-island wide-area latency overrides, comma list
  std::string island_download_bandwidth = "";  // per-island wide-area download overrides, comma list
  std::string island_uplink = "per_device";    // per_device | shared: each device has its own wide-area link,
                                               // or an island's devices share one (flat and sharded then get beta / D)
};

// Islands of devices (ALGORITHMS.md 7.2; DiLoCo's "clusters each hosting a
// smaller number of devices"): N = I x D workers, worker r is device r % D of
// island r / D. Inside an island the devices are data-parallel every step
// (gradient all-reduce over the island's links); the strategy runs between
// the islands, as if each island were one worker.
struct IslandsConfig {
  int64_t count = 0;              // I: islands (0 = strategy.workers / D: one island per worker unless devices is set)
  int64_t devices = 0;            // D: devices per island (0 = strategy.workers / I; both 0: D = 1, as before)
  std::string exchange = "flat";  // flat | leader | sharded: how a cross-island payload travels
};

// The resolved layout: I islands of D devices (I x D = strategy.workers once valid).
struct IslandLayout {
  int64_t islands = 1;
  int64_t devices = 1;
};

struct Config {
  RunConfig run;
  DataConfig data;
  ModelConfig model;
  OptimConfig optim;
  TrainConfig train;
  StrategyConfig strategy;
  DiLoCoConfig diloco;
  SpartaConfig sparta;
  NoLoCoConfig noloco;
  DdpConfig ddp;
  CodecConfig codec;
  PalsgdConfig palsgd;
  DemoConfig demo;
  StreamingConfig streaming;
  SparseLoCoConfig sparseloco;
  DesLocConfig desloc;
  NetworkConfig network;
  IslandsConfig islands;
  FaultConfig faults;
};

// islands.count and islands.devices resolved against strategy.workers.
IslandLayout island_layout(const Config& cfg);

// One field as seen by a visitor. Exactly one of the pointers is set.
// The TOML section a preset uses to describe its runs (read by `atoll sweep`;
// the run configuration ignores it).
inline constexpr const char* kSweepSection = "sweep";

struct FieldRef {
  std::string name;  // dotted, e.g. "train.steps"
  std::string help;
  int64_t* i = nullptr;
  double* d = nullptr;
  bool* b = nullptr;
  std::string* s = nullptr;
  // A string field whose words include true and false (run.resume): a TOML
  // boolean is taken as that word, so `resume = true` keeps working.
  bool bool_words = false;
  std::string type_name() const;
  std::string value_string() const;  // TOML literal of the current value
};

// Calls `fn` for every field of `cfg`, in declaration order.
void visit_fields(Config& cfg, const std::function<void(FieldRef&)>& fn);

// Parses TOML text onto `cfg` (fields not mentioned keep their value).
// Unknown keys and wrong types are collected into `errors`.
void apply_toml(Config& cfg, const std::string& toml_text, const std::string& source, std::vector<std::string>& errors);

// Applies `key=value` overrides (key dotted). Values are parsed by the
// field's type; strings need no quotes.
void apply_overrides(Config& cfg, const std::vector<std::string>& overrides, std::vector<std::string>& errors);

// Throws ConfigError listing `errors` if there are any.
void throw_if_errors(const std::vector<std::string>& errors);

// Config{} <- file (optional) <- overrides, with every parse problem (unknown
// keys, wrong types) appended to `errors`; the values are not checked yet.
// load_config() (atoll/setup.h) adds every area's checks. Throws ConfigError
// only for a file that cannot be read.
Config read_config(const std::string& path, const std::vector<std::string>& overrides,
                   std::vector<std::string>& errors);

// The resolved config as TOML (round-trips through apply_toml).
std::string to_toml(const Config& cfg);

// --- Comparing configs (src/config/flat.cpp) --------------------------------
// A config as "section.key" -> value text, sorted by key: strings quoted,
// floats in their shortest exact form. The one form configs are compared in.
using FlatConfig = std::map<std::string, std::string>;
FlatConfig flatten(const Config& cfg);
// The same from TOML text (a run folder's config.toml): the keys the text
// holds, formatted as flatten() formats them. Throws ConfigError for bad TOML.
FlatConfig flatten_toml(const std::string& toml_text, const std::string& source);
// "key = value" lines (checkpoints and start-up checks store this text) and back.
std::string flat_lines(const FlatConfig& flat);
FlatConfig parse_flat_lines(const std::string& text);
// Keys that say what a run computes: all but where and how it is kept and
// started (its name and folder, overwrite, progress, threads, resume).
// Reports and sweeps compare these.
bool is_computation_key(const std::string& key);
// A finished run's flattened config as this version reads it: each key
// added since runs were published whose default computes what runs made
// before it computed (the knobs of a new method or codec, options that are
// off by default) is filled in at its default where the run's config.toml
// lacks it, so those runs stay counted and reusable. Any other missing key
// stays missing (a difference). The list is in config/flat.cpp.
FlatConfig with_keys_added_later(FlatConfig done);
// Keys that shape a run's trajectory (a resumed run must match them): all but
// run.* (run.seed does) and where the data lie.
bool shapes_trajectory(const std::string& key);
FlatConfig only_keys(const FlatConfig& flat, bool (*keep)(const std::string&));
struct ConfigChange {
  std::string key, a, b;  // "(absent)" where one side lacks the key
};
std::vector<ConfigChange> config_changes(const FlatConfig& a, const FlatConfig& b);
// The first four changes as "key = A <a_label> but B <b_label>" ("; and N
// more"), or "(no difference)".
std::string describe_difference(const FlatConfig& a, const FlatConfig& b, const std::string& a_label,
                                const std::string& b_label);

}  // namespace atl
