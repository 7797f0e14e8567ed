// Real runs: one worker per process, joined by a c10d process group (Gloo on
// CPU) with a TCPStore rendezvous hosted by rank 0, launched like torchrun.
//
// The same Communicator front end (ledger, network model) wraps the process
// group, so every strategy runs unchanged; the group also measures the real
// wall time spent in its collectives. NCCL: the communicator wraps the generic
// c10d::ProcessGroup, so an NCCL group could be passed in where LibTorch has
// CUDA; this build has no CUDA and only Gloo is built and tested.
//
// Thread-safety: a DistGroup belongs to its process's worker thread; its
// heartbeat thread only talks to its own store connection.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "atoll/comm.h"

namespace atl {

// Where this process sits in the job: torchrun's environment or flags.
struct DistOptions {
  int64_t rank = -1;                      // RANK
  int64_t world_size = -1;                // WORLD_SIZE
  int64_t local_world_size = -1;          // LOCAL_WORLD_SIZE (-1: assume all ranks on this host)
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR: rank 0's host, serves the TCPStore
  int master_port = 29500;                // MASTER_PORT
  std::string ifname;                     // GLOO_SOCKET_IFNAME (empty: the interface reaching master_addr)
  double timeout_s = 300;                 // a collective or rendezvous longer than this fails
  double heartbeat_s = 1;                 // liveness beat, used to name a lost rank
  // ATOLL_DIST_SYNC_OPS=1 (--dist-sync-ops): an untimed barrier before every
  // communicator op, so measured communication time is the transfer alone,
  // not also the wait for a slower peer (checking the network model).
  bool sync_before_ops = false;
  // The job secret (ATOLL_JOB_TOKEN_FILE or ATOLL_JOB_TOKEN; see
  // docs/SECURITY.md): only processes holding it join the rendezvous. Empty:
  // none given, allowed on one host (MASTER_ADDR loopback) or with
  // `insecure`.
  std::vector<uint8_t> job_token;
  std::string job_token_source;  // where it came from, for messages
  // ATOLL_INSECURE=1 (--insecure): a multi-host run without a token, which
  // anyone who can reach MASTER_PORT can join or disturb.
  bool insecure = false;
};

// The range of ATOLL_DIST_TIMEOUT (--dist-timeout), in seconds.
constexpr double kMinDistTimeout = 1;
constexpr double kMaxDistTimeout = 86400;  // a day
// A timeout in seconds from text; `what` names the variable or flag in the
// message. Throws std::invalid_argument for text that is not a number, and
// for a number that is not finite or outside [kMinDistTimeout, kMaxDistTimeout].
double parse_dist_timeout(const std::string& text, const std::string& what);

// True when the environment asks for a real run (WORLD_SIZE is set).
bool dist_requested_by_env();
// Fills DistOptions from RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, GLOO_SOCKET_IFNAME, ATOLL_DIST_TIMEOUT (seconds),
// ATOLL_DIST_SYNC_OPS, ATOLL_JOB_TOKEN_FILE / ATOLL_JOB_TOKEN (read and
// checked here: throws for an unreadable or malformed token) and
// ATOLL_INSECURE; unset variables keep the defaults in `base`.
DistOptions dist_options_from_env(DistOptions base = {});
// `atoll token new FILE`: creates FILE (never replacing anything there, nor
// following a symlink) with mode 0600 and a fresh job token: 32 random bytes
// from OpenSSL, as hex. Throws naming the file if it cannot.
void write_new_job_token(const std::string& path);

// Rejects impossible values with a message naming the variable or flag, and
// a multi-host run (MASTER_ADDR not loopback) without a job token unless
// `insecure`, saying how to make one (the timeout also when set in code:
// it must be in the range above).
void validate(const DistOptions& opts);

// A connected process group plus its communicator (ledger, clock) and raw
// observer collectives that stay out of the ledger and the clock.
class DistGroup {
 public:
  virtual ~DistGroup() = default;
  virtual Communicator& comm() = 0;
  virtual int64_t rank() const = 0;
  virtual int64_t size() const = 0;
  // Wall seconds this rank spent inside the communicator's ops (observer
  // collectives excluded).
  virtual double measured_comm_seconds() const = 0;
  // Islands (D = island_devices > 1 at connect): this rank is device r % D of
  // island r / D. island_comm(): the island's D ranks (group rank r % D);
  // cross_comm(): device r % D of every island (group rank r / D, size N / D).
  // Both null when connected without islands. Their ops are in their own
  // ledgers and measured in measured_comm_seconds().
  virtual Communicator* island_comm() { return nullptr; }
  virtual Communicator* cross_comm() { return nullptr; }
  // Observer collectives (not in the ledger or the simulated clock):
  // all-gather of equal-size 1-D tensors, barrier and all-gather of strings.
  virtual std::vector<at::Tensor> raw_all_gather(const at::Tensor& t) = 0;
  virtual void raw_barrier() = 0;
  virtual std::vector<std::string> raw_all_gather_strings(const std::string& s) = 0;
  // Leaves a message for the other ranks before this rank exits on an error,
  // so they report the cause instead of "connection closed".
  virtual void report_failure(const std::string& message) = 0;
  // Clean shutdown: stops the heartbeat, waits for every rank (so rank 0's
  // store outlives the others' last use of it).
  virtual void finish() = 0;
};

// Rendezvous at MASTER_ADDR:MASTER_PORT (rank 0 hosts the TCPStore), start-up
// checks (every rank's world size and `fingerprint`, its resolved config as
// flat_lines(flatten(cfg)),
// must equal rank 0's; differing keys are named), then a Gloo process group.
// Throws with the address and what to check on failure.
// `island_devices` = D > 1 also connects the island and cross groups (see
// DistGroup::island_comm); it must divide the world size (else
// std::invalid_argument before any connection is tried).
std::unique_ptr<DistGroup> connect_gloo(const DistOptions& opts, CollectiveAlgo ledger_algo,
                                        const std::string& fingerprint = "", int64_t island_devices = 1);

}  // namespace atl
