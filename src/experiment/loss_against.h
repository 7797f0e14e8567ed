// RESULTS.md's figure of the final loss against one grid key, for a preset
// whose question is a trend in that key ([sweep] against; R12: the loss
// against H up to 10,000). The main table lists every setting; this figure
// lines them up by the key's value: a table with one column per runs entry
// the grid expands, and a chart (SVG) with one line per such entry, the
// settings that set the key on their own line as lone points, and the
// settings without it (DDP) as horizontal reference bands.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "atoll/experiment.h"
#include "report/groups.h"

namespace atl {

struct LossAgainstFigure {
  std::string markdown;  // the table, a note and the chart's image link ("" = nothing to draw)
  std::string svg;       // the chart
  std::string file;      // the chart's file name, under img/ beside the page
};

// The figure of `spec.against` over the settings in `groups` (their names
// are the spec's run settings). Empty markdown and svg when the spec names
// no key or no setting has a value for it.
LossAgainstFigure loss_against(const SweepSpec& spec, const std::vector<RunGroup>& groups);

}  // namespace atl
