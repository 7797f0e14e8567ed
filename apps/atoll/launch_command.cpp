#include "launch_command.h"

#include <cstdio>
#include <filesystem>

LaunchCommand::LaunchCommand(CLI::App& app) {
  launch_ = app.add_subcommand("launch",
                               "run a real job of N ranks per host (like torchrun): atoll launch --nproc=N [--nnodes=M "
                               "--node-rank=K --master-addr=HOST --master-port=P] [train arguments]");
  launch_->allow_extras();
  launch_->add_option("--nproc,--nproc-per-node", opts_.nproc, "ranks to start on this machine")->required();
  launch_->add_option("--nnodes", opts_.nnodes, "hosts in the job (run atoll launch on each)")->capture_default_str();
  launch_->add_option("--node-rank", opts_.node_rank, "this host's index, 0..nnodes-1 (0 hosts rank 0)")
      ->capture_default_str();
  launch_->add_option("--master-addr", opts_.master_addr, "address of the host with node rank 0")
      ->capture_default_str();
  launch_->add_option("--master-port", opts_.master_port, "rendezvous port (0: a free one; required with --nnodes > 1)")
      ->capture_default_str();
  launch_
      ->add_option("--max-restarts", opts_.max_restarts,
                   "after a rank fails, restart the job up to this many times; it resumes from the newest "
                   "checkpoint (set run.checkpoint_every)")
      ->capture_default_str();
  launch_
      ->add_option("--grace", opts_.grace_seconds, "seconds between SIGTERM and SIGKILL when a rank fails or on Ctrl-C")
      ->capture_default_str();
}

bool LaunchCommand::run(int& exit_code) {
  if (!launch_->parsed()) return false;
  // Every rank runs this same binary's `train` with the given arguments.
  opts_.argv = {std::filesystem::read_symlink("/proc/self/exe").string(), "train"};
  for (const auto& a : launch_->remaining()) opts_.argv.push_back(a);
  const atl::LaunchResult r = atl::launch_local(opts_);
  if (r.exit_code != 0) std::fprintf(stderr, "\natoll launch: %s\n", r.error.c_str());
  exit_code = r.exit_code;
  return true;
}
