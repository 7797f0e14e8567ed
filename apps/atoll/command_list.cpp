#include "command_list.h"

#include <cstdio>
#include <string>

void print_command_list(const CLI::App& app) {
  std::printf("%s\n\nusage: atoll <command> [arguments]   (atoll <command> --help: its options)\n\ncommands:\n",
              app.get_description().c_str());
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    // A description's first clause: the rest is its usage or details.
    std::string line = sub->get_description();
    if (const auto more = line.find(": "); more != std::string::npos) line.resize(more);
    if (const auto more = line.find(", "); line.size() > 70 && more != std::string::npos) line.resize(more);
    // Never a parenthesis left open by the cut: drop the aside instead.
    if (const auto open = line.rfind(" ("); open != std::string::npos && line.find(')', open) == std::string::npos)
      line.resize(open);
    std::printf("  %-9s %s\n", sub->get_name().c_str(), line.c_str());
  }
  std::printf("\nEvery config key, its default and meaning: atoll train --help\n");
}
