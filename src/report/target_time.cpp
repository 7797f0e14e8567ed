#include "report/target_time.h"

#include "report/figure_text.h"

namespace atl {

TargetTime target_time(const RunData& run, double target) {
  const double t = time_to_loss(run, target);
  if (t >= 0) return {t, true};
  return {run.sim_seconds, false};
}

TargetTimes target_times(const std::vector<TargetTime>& times) {
  TargetTimes out;
  std::vector<double> seconds;
  for (const TargetTime& t : times) {
    seconds.push_back(t.seconds);
    out.reached += t.reached ? 1 : 0;
  }
  out.runs = static_cast<int>(times.size());
  out.seconds = mean_interval(seconds);
  return out;
}

std::string target_times_text(const TargetTimes& t, const std::string& plus_minus, const std::string& at_least) {
  if (t.runs == 0) return "";
  const FigureText f = seconds_figure(t.seconds);
  if (t.censored())
    return at_least + " " + f.value + " (" + std::to_string(t.reached) + " of " + std::to_string(t.runs) + " reached)";
  return f.value + (f.interval.empty() ? "" : " " + plus_minus + " " + f.interval);
}

}  // namespace atl
