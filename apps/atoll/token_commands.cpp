#include "token_commands.h"

#include <cstdio>

#include "atoll/dist.h"

TokenCommands::TokenCommands(CLI::App& app) {
  auto* token = app.add_subcommand("token", "job tokens for real runs: atoll token new FILE");
  token->require_subcommand(1);
  new_ = token->add_subcommand(
      "new",
      "write a fresh job token (32 random bytes, hex) into a new file of mode 0600; copy it to every host "
      "and start the ranks with ATOLL_JOB_TOKEN_FILE=FILE (docs/SECURITY.md)");
  new_->add_option("file", path_, "the file to create (an existing file is never replaced)")->required();
}

bool TokenCommands::run() {
  if (!new_->parsed()) return false;
  atl::write_new_job_token(path_);
  std::printf(
      "wrote a new job token to %s (mode 0600): copy it to every host over a channel you trust, and "
      "start every rank with ATOLL_JOB_TOKEN_FILE=%s\n",
      path_.c_str(), path_.c_str());
  return true;
}
