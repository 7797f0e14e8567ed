// What `atoll train` prints: the progress line while it runs and the
// summary when it is done (a language model in tokens with its perplexity,
// a classifier or regressor in examples, a classifier with its accuracy).
#pragma once

#include "atoll/config.h"
#include "atoll/train.h"

// A live line on a terminal; plain lines (evaluations and every 10%) otherwise.
atl::TrainHooks progress_hooks(const atl::Config& cfg);
// The finished (or stopped) run in a few lines.
void print_done(const atl::RunSummary& s);
