// Local multi-process launcher behind `atoll launch --nproc=N <train args>`
// (like `torchrun --standalone`): starts N copies of a program with the
// torchrun environment, prefixes their output with "[rank k] " and tears the
// whole job down when one rank fails or the launcher is interrupted.
//
// POSIX only. Thread-safety: one launch_local() per process at a time, since
// it owns the SIGINT/SIGTERM/SIGCHLD handlers while it runs (a concurrent call
// throws). It writes to `out`/`err` from the calling thread only.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace atl {

struct LaunchOptions {
  int64_t nproc = 1;      // ranks to start on this host, 1..1024
  int64_t nnodes = 1;     // hosts in the job (torchrun --nnodes)
  int64_t node_rank = 0;  // this host's index: its ranks are
                          // node_rank*nproc .. node_rank*nproc+nproc-1
  std::string master_addr = "127.0.0.1";
  int master_port = 0;            // 0: pick a free TCP port on master_addr
  std::vector<std::string> argv;  // program and arguments run by every rank;
                                  // argv[0] without '/' is looked up on PATH
  int64_t max_restarts = 0;       // after a rank fails, run the whole job again up to
                                  // this many times (torchrun --max-restarts); ranks see
                                  // TORCHELASTIC_RESTART_COUNT and `atoll train` resumes
                                  // from the newest complete checkpoint
  double grace_seconds = 10;      // after a failure or a forwarded signal:
                                  // SIGTERM, then SIGKILL after this long
  std::string job_token;          // hex text passed to the ranks as ATOLL_JOB_TOKEN; empty:
                                  // the environment's ATOLL_JOB_TOKEN(_FILE), and for a one-host
                                  // job without either a fresh random one (docs/SECURITY.md)
  std::ostream* out = nullptr;    // prefixed child stdout (nullptr: std::cout)
  std::ostream* err = nullptr;    // prefixed child stderr (nullptr: std::cerr)
};

struct LaunchResult {
  int exit_code = 0;         // 0 when every rank exited 0; else the first failing rank's
                             // code (128 + signal if killed), or 128 + signal when the
                             // launcher was interrupted
  int64_t failed_rank = -1;  // first rank that failed, -1 if none (also when interrupted)
  int64_t restarts = 0;      // how often the job was restarted (--max-restarts)
  std::string error;         // "rank 1 exited with code 3: <its stderr line>",
                             // "rank 0 was killed by signal 9 (Killed)",
                             // "interrupted by signal 2 (Interrupt)"; empty on success
};

// Runs opts.argv as this host's nproc ranks, each with RANK, LOCAL_RANK,
// WORLD_SIZE (nnodes*nproc), LOCAL_WORLD_SIZE, GROUP_RANK (node_rank),
// MASTER_ADDR and MASTER_PORT added to this
// process's environment, in its own process group, with stdin from /dev/null.
// Blocks until every rank has exited. The first rank to exit non-zero (or by a signal) fails the job: the
// others get SIGTERM, then SIGKILL after grace_seconds. SIGINT/SIGTERM sent to
// the launcher are forwarded the same way; a second one kills at once.
// A program that cannot be executed is a failing rank (exit code 127).
// Throws std::invalid_argument for bad options and std::runtime_error when
// the job cannot be set up (no free port, fork or pipe failing; ranks already
// started are stopped and reaped first).
LaunchResult launch_local(const LaunchOptions& opts);

// A TCP port that is free on `addr` right now (the kernel's pick for port 0).
// Another process may take it before it is used; a rendezvous on it then
// fails loudly. Throws std::runtime_error if `addr` does not resolve.
int pick_free_port(const std::string& addr);

}  // namespace atl
