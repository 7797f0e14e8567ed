// What `atoll` alone prints: every command with a line each, as git and
// cargo do, rather than CLI11's bare "A subcommand is required".
#pragma once

#include <CLI/CLI.hpp>

void print_command_list(const CLI::App& app);
