// SPARTA's config rules and p schedule, apart from the strategy's code so
// that validate() and the fuzz build (fuzz/CMakeLists.txt) link them without it.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "compress/codec_names.h"
#include "config/checks.h"
#include "strategy/sparta.h"

namespace atl {

// ---- p schedule ------------------------------------------------------------

namespace {

// Mean of the discrete cosine factor 0.5 (1 + cos(pi i / D)) over i = 0..D-1:
// the cosines sum to 1 (the full half-period from 0 to D sums to 0), so the
// mean is 0.5 + 0.5 / D.
double cosine_mean(int64_t decay_steps) { return 0.5 + 0.5 / double(decay_steps); }

}  // namespace

double sparta_peak_p(const SpartaConfig& c, int64_t steps, int64_t warmup) {
  if (c.p_schedule != "cosine") return c.p;
  const int64_t hold = std::clamp<int64_t>(warmup, 0, steps);
  const int64_t decay = steps - hold;
  if (decay == 0) return c.p;
  const double floor = c.p_min_factor * c.p;
  const double m = cosine_mean(decay);
  // mean = [hold * peak + decay * (floor + (peak - floor) * m)] / steps = p
  return (c.p * double(steps) - floor * double(decay) * (1.0 - m)) / (double(hold) + double(decay) * m);
}

double sparta_p_at(const SpartaConfig& c, int64_t t, int64_t steps, int64_t warmup) {
  if (c.p_schedule != "cosine") return c.p;
  const int64_t hold = std::clamp<int64_t>(warmup, 0, steps);
  const double peak = sparta_peak_p(c, steps, warmup);
  if (t < hold) return peak;
  const int64_t decay = steps - hold;
  const double floor = c.p_min_factor * c.p;
  const double progress = double(std::min(t - hold, decay)) / double(std::max<int64_t>(1, decay));
  return floor + (peak - floor) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

// ---- config rules ----------------------------------------------------------

void validate_sparta(const Config& c, std::vector<std::string>& errors) {
  Problems p(errors);
  p.need(c.sparta.p >= 0 && c.sparta.p <= 1, "sparta.p must be in [0, 1]");
  p.enum_check("sparta.selector", c.sparta.selector, {"random", "partitioned", "sequential", "layerwise"});
  p.need(c.sparta.selector == "random" || c.sparta.p > 0,
         "sparta.p = 0 works with sparta.selector = random only (the other selectors cycle through 1/p parts)");
  p.need(c.sparta.interval >= 1, "sparta.interval (k) must be >= 1");
  p.need(c.sparta.delay >= 0, "sparta.delay (d) must be >= 0 steps");
  p.enum_check("sparta.apply", c.sparta.apply, {"overwrite", "delta"});
  p.need(c.sparta.fault_rate >= 0 && c.sparta.fault_rate < 1, "sparta.fault_rate must be in [0, 1)");
  p.enum_check("sparta.p_schedule", c.sparta.p_schedule, {"constant", "cosine"});
  p.need(c.sparta.p_min_factor >= 0 && c.sparta.p_min_factor <= 1, "sparta.p_min_factor must be in [0, 1]");
  p.need(c.sparta.p_schedule == "constant" || c.sparta.selector == "random",
         "sparta.p_schedule = 'cosine' needs sparta.selector = 'random' (the partition selectors need a fixed p)");
  if (c.sparta.p_schedule == "cosine") {
    const double peak = sparta_peak_p(c.sparta, c.train.steps, c.optim.warmup_steps);
    p.need(peak <= 1.0, "sparta.p_schedule = 'cosine' needs a start value of p above 1 (" + std::to_string(peak) +
                            ") for a mean of sparta.p = " + std::to_string(c.sparta.p) +
                            "; lower sparta.p, raise sparta.p_min_factor or shorten optim.warmup_steps");
  }
  // The exchanged entries change every time, so a payload must keep every
  // entry's position (no sparse codec) and has no residual to carry to the
  // next one (no codec that needs error feedback).
  const CodecInfo* codec = find_codec(c.sparta.codec);  // unknown: reported by sparta.codec's own check
  p.need(!codec || (!codec->sparse && !codec->feedback),
         "sparta.codec = '" + c.sparta.codec + "' is not supported (the selected entries change every exchange); use " +
             dense_codec_choices());
}

}  // namespace atl
