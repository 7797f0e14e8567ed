// Streaming DiLoCo's config rules, apart from the strategy's code so
// that validate() and the fuzz build (fuzz/CMakeLists.txt) link them without it.
#include <algorithm>
#include <regex>

#include "config/checks.h"
#include "strategy/streaming.h"

namespace atl {

void validate_streaming(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.streaming.fragment_blocks >= 1, "streaming.fragment_blocks must be >= 1");
  p.enum_check("streaming.pattern", c.streaming.pattern, {"strided", "sequential"});
  try {
    const std::regex re(c.streaming.block_pattern);
    p.need(re.mark_count() >= 1, "streaming.block_pattern needs a group for the block index, e.g. blocks\\.(\\d+)\\.");
  } catch (const std::regex_error& ex) {
    p.need(false, "streaming.block_pattern is not a valid regular expression (ECMAScript): " + std::string(ex.what()));
  }
  p.need(c.streaming.overlap >= 0, "streaming.overlap (tau) must be >= 0");
  p.need(c.streaming.alpha >= 0 && c.streaming.alpha <= 1, "streaming.alpha must be in [0, 1]");
  // Eager updates wait for a fragment's all-reduce at its next sync, H steps
  // later: there is no earlier prepare step for tau to move, so a tau > 0 would
  // be a setting that does nothing. Refused rather than ignored.
  p.need(c.strategy.name != "streaming" || !c.streaming.eager || c.streaming.overlap == 0,
         "streaming.eager = true overlaps each fragment's all-reduce with the whole next round (H steps), so "
         "streaming.overlap (tau) does not apply: set streaming.overlap = 0 (it is " +
             std::to_string(c.streaming.overlap) + "), or streaming.eager = false to overlap tau steps");
  // Streaming's per-fragment outer step is its own (streaming.cpp), not OuterSync's.
  p.need(c.strategy.name != "streaming" || c.diloco.outer_steps_per_sync == 1,
         "streaming takes one outer step per fragment sync: diloco.outer_steps_per_sync must be 1 with "
         "strategy.name = streaming (it applies to diloco, sparta_diloco and palsgd's own key)");
  if (c.strategy.name == "streaming" && c.model.kind == "gpt" && c.streaming.fragment_blocks >= 1 &&
      c.diloco.inner_steps >= 1 && c.model.n_layer >= 1) {
    // ceil(n_layer / fragment_blocks) without overflow for huge n_layer (fuzz finding).
    const int64_t fragments = (c.model.n_layer - 1) / c.streaming.fragment_blocks + 1;
    p.need(c.diloco.inner_steps % fragments == 0,
           "streaming: diloco.inner_steps (H = " + std::to_string(c.diloco.inner_steps) +
               ") must be a multiple of the number of fragments F = " + std::to_string(fragments) +
               " (model.n_layer / streaming.fragment_blocks, rounded up), so one fragment syncs every H/F steps");
    p.need(fragments < 1 || c.diloco.inner_steps % fragments != 0 ||
               c.streaming.overlap < c.diloco.inner_steps / fragments,
           "streaming.overlap (tau) must be < H/F = " +
               std::to_string(c.diloco.inner_steps / std::max<int64_t>(1, fragments)) +
               " so a fragment's sync finishes before the next one starts");
  }
}

}  // namespace atl
