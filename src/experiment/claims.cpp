// Claim checks: a small expression language over a sweep's final metrics,
// so a preset states what it expects in its own file and RESULTS.md's
// verdicts are computed, not typed.
//
//   check   := sum [ ('<' | '<=' | '>' | '>=') sum ]
//   sum     := product { ('+' | '-') product }
//   product := unary { ('*' | '/') unary }
//   unary   := '-' unary | number | '(' sum ')' | name '(' args ')'
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <set>
#include <stdexcept>

#include "atoll/cost.h"
#include "atoll/experiment.h"
#include "atoll/net.h"
#include "report/figure_text.h"
#include "util/stats.h"

namespace atl {
namespace {

std::string short_number(double v) {
  if (std::isnan(v)) return "not finite";  // never "nan": a diverged run's loss
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// A difference with its sign, 3 significant digits: "+0.0399", "-0.01".
std::string signed_number(double v) {
  if (!std::isfinite(v)) return short_number(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.3g", v);
  return buf;
}

const char* const kFunctions =
    " (functions: loss ppl bytes time corr update_correlation disagreement util ttt of a run name; "
    "abs(x), min(x, y), max(x, y), copy_seconds(params, bytes_per_element, bits_per_second))";

class ClaimParser {
 public:
  ClaimParser(const std::string& text, const std::map<std::string, RunMetrics>& runs,
              const std::map<std::string, std::string>* censored = nullptr)
      : s_(text), runs_(runs), censored_(censored) {}

  bool check(std::string& detail) {
    double left = 0, right = 0;
    const std::string op = sides(left, right, detail);
    if (op == "<") return left < right;
    if (op == "<=") return left <= right;
    if (op == ">") return left > right;
    return left >= right;
  }

  // Parses "left op right", returning op and both sides' values.
  std::string sides(double& left, double& right, std::string& detail) {
    left = sum();
    skip();
    std::string op;
    if (peek('<') || peek('>')) {
      op = s_[i_++];
      if (peek('=')) op += s_[i_++];
    }
    if (op.empty()) fail("expected a comparison (<, <=, >, >=)");
    const std::string left_text = detail_;
    detail_.clear();
    right = sum();
    skip();
    if (i_ != s_.size()) fail("unexpected '" + s_.substr(i_) + "'");
    detail = left_text + " " + op + " " + detail_;
    return op;
  }

  // The run (setting) names the check refers to, once parsed.
  const std::set<std::string>& names() const { return names_; }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument("claim check '" + s_ + "' at column " + std::to_string(i_ + 1) + ": " + why);
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool peek(char c) {
    skip();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  // Appends to the human-readable form of the side being parsed.
  void show(const std::string& t) {
    if (!detail_.empty() && detail_.back() != '(' && t != ")" && t != ",") detail_ += " ";
    detail_ += t;
  }

  double sum() {
    double v = product();
    while (peek('+') || peek('-')) {
      const char op = s_[i_++];
      show(std::string(1, op));
      const double r = product();
      v = op == '+' ? v + r : v - r;
    }
    return v;
  }
  double product() {
    double v = unary();
    while (peek('*') || peek('/')) {
      const char op = s_[i_++];
      show(std::string(1, op));
      const double r = unary();
      v = op == '*' ? v * r : v / r;
    }
    return v;
  }
  double unary() {
    if (peek('-')) {
      ++i_;
      show("-");
      return -unary();
    }
    if (peek('(')) {
      ++i_;
      show("(");
      const double v = sum();
      expect(')');
      show(")");
      return v;
    }
    skip();
    if (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) {
      size_t used = 0;
      const double v = std::stod(s_.substr(i_), &used);
      show(s_.substr(i_, used));
      i_ += used;
      return v;
    }
    const size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) ++i_;
    const std::string name = s_.substr(start, i_ - start);
    if (name.empty()) fail("expected a number, '(' or a function");
    expect('(');
    return call(name);
  }

  // After "name(": reads the arguments and the closing parenthesis.
  double call(const std::string& name) {
    static const char* metrics[] = {"loss",         "ppl",  "bytes", "time", "corr", "update_correlation",
                                    "disagreement", "util", "ttt"};
    for (const char* m : metrics) {
      if (name != m) continue;
      skip();
      const size_t start = i_;
      while (i_ < s_.size() && s_[i_] != ')') ++i_;
      std::string run = s_.substr(start, i_ - start);
      while (!run.empty() && std::isspace(static_cast<unsigned char>(run.back()))) run.pop_back();
      expect(')');
      names_.insert(run);
      auto it = runs_.find(run);
      if (it == runs_.end()) throw std::invalid_argument("claim check '" + s_ + "': run '" + run + "' has no results");
      const RunMetrics& r = it->second;
      double v = name == "loss"                 ? r.loss
                 : name == "ppl"                ? r.ppl
                 : name == "bytes"              ? r.bytes
                 : name == "time"               ? r.time
                 : name == "corr"               ? r.corr
                 : name == "update_correlation" ? r.update_correlation
                 : name == "disagreement"       ? r.disagreement
                 : name == "util"               ? r.util
                                                : r.ttt;
      if (name == "ttt" && v < 0) v = std::numeric_limits<double>::infinity();  // no target_loss
      // An agreement metric the run did not measure (a comparison with NaN
      // would quietly be false); a NaN loss is a diverged run, judged "not
      // finite" below.
      if (std::isnan(v) && (name == "update_correlation" || name == "disagreement"))
        throw std::invalid_argument("claim check '" + s_ + "': run '" + run + "' has no " + name +
                                    " (one worker, strategy.correlation_every = 0, or no sync measured)");
      // A time to target some seed never reached is a lower bound: its end.
      if (name == "ttt" && censored_ && censored_->count(run))
        show(name + "(" + run + ")=≥ " + short_number(v) + " (" + censored_->at(run) + ")");
      else
        show(name + "(" + run + ")=" + short_number(v));
      return v;
    }
    static const char* numeric[] = {"abs", "min", "max", "copy_seconds"};
    if (std::none_of(std::begin(numeric), std::end(numeric), [&](const char* f) { return name == f; }))
      fail("unknown function " + name + kFunctions);
    // Numeric functions: evaluate the arguments without showing them.
    std::string saved = detail_;
    std::vector<double> args;
    if (!peek(')')) {
      args.push_back(sum());
      while (peek(',')) {
        ++i_;
        args.push_back(sum());
      }
    }
    expect(')');
    detail_ = saved;
    double v = 0;
    if (name == "abs" && args.size() == 1) {
      v = std::fabs(args[0]);
    } else if (name == "min" && args.size() == 2) {
      v = std::min(args[0], args[1]);
    } else if (name == "max" && args.size() == 2) {
      v = std::max(args[0], args[1]);
    } else if (name == "copy_seconds" && args.size() == 3) {
      // The simulator's own cost formula (net/cost.cpp), not a restatement.
      CostQuery q;
      q.params = args[0];
      q.bytes_per_element = args[1];
      q.bandwidth = args[2] / 8;
      v = estimate_cost(q).one_copy_seconds;
    } else {
      fail(name + " takes a different number of arguments than " + std::to_string(args.size()) + kFunctions);
    }
    show(name + "(...)=" + short_number(v));
    return v;
  }

  const std::string& s_;
  const std::map<std::string, RunMetrics>& runs_;
  const std::map<std::string, std::string>* censored_;  // setting -> "k of K reached" for censored ttt means
  size_t i_ = 0;
  std::string detail_;
  std::set<std::string> names_;
};

// Differences smaller than this, relative to the sides compared, are
// rounding noise: they count as 0.
constexpr double kRelativeNoise = 1e-12;

// One seed's left - right, with rounding noise snapped to 0.
double paired_difference(double left, double right) {
  const double d = left - right;
  if (!std::isfinite(d)) return d;  // a diverged (or unreached, untargeted) side: never noise
  return std::fabs(d) <= kRelativeNoise * std::max(std::fabs(left), std::fabs(right)) ? 0.0 : d;
}

bool compare(double left, const std::string& op, double right) {
  if (op == "<") return left < right;
  if (op == "<=") return left <= right;
  if (op == ">") return left > right;
  return left >= right;
}

// Where the paired difference lies: wholly below or above 0, exactly 0
// (every seed the same zero difference), across 0, or unknown (one pair).
enum class Side { Below, Above, Zero, Straddles, Unknown };

ClaimVerdict::Outcome outcome_of(Side side, const std::string& op) {
  const bool less = op[0] == '<';
  switch (side) {
    case Side::Below:
      return less ? ClaimVerdict::Holds : ClaimVerdict::Fails;
    case Side::Above:
      return less ? ClaimVerdict::Fails : ClaimVerdict::Holds;
    case Side::Zero:  // equal in every seed: <= and >= hold, < and > fail
      return op.size() == 2 ? ClaimVerdict::Holds : ClaimVerdict::Fails;
    default:
      return ClaimVerdict::Inconclusive;
  }
}

std::string pairs_text(int n) { return n == 1 ? "n=1 pair" : "n=" + std::to_string(n) + " pairs"; }

// The settings' means over their seeds, for the readable form of a check;
// `censored` gets "k of K reached" for a setting some seed of which never
// reached the target (its ttt mean is then a lower bound).
std::map<std::string, RunMetrics> setting_means(const SeedMetrics& runs, std::map<std::string, std::string>& censored) {
  std::map<std::string, RunMetrics> means;
  for (const auto& [name, seeds] : runs) {
    if (seeds.empty()) continue;
    RunMetrics m;
    m.loss = m.ppl = m.bytes = m.time = m.corr = m.util = m.ttt = m.update_correlation = m.disagreement = 0;
    int reached = 0;
    const double n = double(seeds.size());
    for (const RunMetrics& r : seeds) {
      m.loss += r.loss / n;
      m.ppl += r.ppl / n;
      m.bytes += r.bytes / n;
      m.time += r.time / n;
      m.corr += r.corr / n;
      m.update_correlation += r.update_correlation / n;
      m.disagreement += r.disagreement / n;
      m.util += r.util / n;
      m.ttt += r.ttt / n;
      reached += r.reached ? 1 : 0;
    }
    if (seeds.front().ttt < 0) m.ttt = -1;  // no target_loss
    m.reached = reached == int(seeds.size());
    if (!m.reached && m.ttt >= 0)
      censored[name] = std::to_string(reached) + " of " + std::to_string(seeds.size()) + " reached";
    means[name] = m;
  }
  return means;
}

// Left and right of `check` on one seed's metrics.
std::pair<double, double> sides_of(const std::string& check, const std::map<std::string, RunMetrics>& one) {
  ClaimParser parser(check, one);
  double l = 0, r = 0;
  std::string unused;
  parser.sides(l, r, unused);
  return {l, r};
}

// Seeds every named setting ran (settings are paired by run.seed).
std::set<int64_t> common_seeds(const std::set<std::string>& names, const SeedMetrics& runs) {
  std::set<int64_t> common;
  bool first = true;
  for (const auto& name : names) {
    std::set<int64_t> has;
    for (const RunMetrics& r : runs.at(name)) has.insert(r.seed);
    if (first) {
      common = has;
    } else {
      std::set<int64_t> both;
      for (int64_t x : common)
        if (has.count(x)) both.insert(x);
      common = both;
    }
    first = false;
  }
  return common;
}

// The seeds needed for a half-width of `goal`, from the half-width's
// 1/sqrt(K) scaling (the t quantile's own shrinking makes it a little
// pessimistic).
int64_t seeds_for(double half_width, int seeds, double goal) {
  const double k = std::ceil(double(seeds) * (half_width / goal) * (half_width / goal));
  return k > 1e6 ? int64_t(1e6) : std::max<int64_t>(seeds + 1, int64_t(k));
}

}  // namespace

bool evaluate_claim(const std::string& check, const std::map<std::string, RunMetrics>& runs, std::string& detail) {
  ClaimParser parser(check, runs);
  return parser.check(detail);
}

const char* outcome_name(ClaimVerdict::Outcome o) {
  switch (o) {
    case ClaimVerdict::Holds:
      return "holds";
    case ClaimVerdict::Fails:
      return "fails";
    case ClaimVerdict::Equivalent:
      return "equivalent";
    default:
      return "inconclusive";
  }
}

ClaimVerdict judge_claim(const std::string& check, const SeedMetrics& runs, double effect) {
  // The check on the settings' means over their seeds: checks the syntax,
  // finds the settings it names and gives the readable form.
  std::map<std::string, std::string> censored;
  const std::map<std::string, RunMetrics> means = setting_means(runs, censored);
  ClaimParser on_means(check, means, &censored);
  ClaimVerdict v;
  double left = 0, right = 0;
  std::string shown;
  const std::string op = on_means.sides(left, right, shown);

  // A check that names no run (a closed form such as copy_seconds(...)) has
  // no seeds to vary: it is a deterministic comparison.
  if (on_means.names().empty()) {
    const double d = paired_difference(left, right);
    if (!std::isfinite(d)) {
      v.detail = shown + "; left - right is not finite";
      v.difference = "not finite";
      return v;
    }
    v.outcome = compare(d, op, 0) ? ClaimVerdict::Holds : ClaimVerdict::Fails;
    v.detail = shown + "; a closed form (no runs), decided exactly: left - right = " + short_number(d);
    v.difference = signed_number(d) + " (closed form)";
    v.resolves = true;
    return v;
  }

  // Per seed, left - right, settings paired by run.seed.
  const std::set<std::string>& names = on_means.names();
  std::vector<std::map<std::string, RunMetrics>> per_seed;
  for (int64_t seed : common_seeds(names, runs)) {
    std::map<std::string, RunMetrics> one;
    for (const auto& name : names)
      for (const RunMetrics& r : runs.at(name))
        if (r.seed == seed) one[name] = r;
    per_seed.push_back(one);
  }
  std::vector<double> differences;
  double scale = 0;  // the sides' size, for what counts as the same difference
  int diverged = 0;
  for (const auto& one : per_seed) {
    const auto [l, r] = sides_of(check, one);
    differences.push_back(paired_difference(l, r));
    scale = std::max({scale, std::fabs(l), std::fabs(r)});
    diverged += std::isfinite(differences.back()) ? 0 : 1;
  }
  v.seeds = static_cast<int>(differences.size());
  const std::string head = shown + " (means); left - right = ";
  if (diverged > 0) {
    v.detail = head + "not finite (diverged) in " + std::to_string(diverged) + " of " + std::to_string(v.seeds) +
               " seeds (" + pairs_text(v.seeds) + ")";
    v.difference = "not finite";
    return v;
  }

  MeanInterval d = mean_interval(differences);
  // The same difference in every seed (bytes, modelled times, closed forms
  // of runs) is decided exactly: a zero-width interval, not t * 0-ish noise.
  bool exact = v.seeds >= 2;
  for (double x : differences) exact = exact && std::fabs(x - differences.front()) <= kRelativeNoise * scale;
  if (exact) {
    d.mean = differences.front();
    d.half_width = d.sd = 0;
  }
  Side side = Side::Unknown;
  if (exact)
    side = d.mean < 0 ? Side::Below : d.mean > 0 ? Side::Above : Side::Zero;
  else if (d.has_interval())
    side = d.high() < 0 ? Side::Below : d.low() > 0 ? Side::Above : Side::Straddles;
  v.outcome = outcome_of(side, op);

  const std::string n_pairs = "n=" + std::to_string(v.seeds);
  if (exact) {
    v.detail = head + short_number(d.mean) + " in every seed, decided exactly (" + pairs_text(v.seeds) + ")";
    v.difference = signed_number(d.mean) + " exactly (" + n_pairs + ")";
    v.resolves = true;
  } else if (d.has_interval()) {
    const FigureText t = figure_text(d, {FigureFormat::Significant, 4});
    v.detail = head + t.value + (t.interval.empty() ? "" : " ± " + t.interval) + " (95% interval, " +
               pairs_text(v.seeds) + ")";
    const FigureText s = figure_text(d, {FigureFormat::Significant, 3});
    v.difference =
        (d.mean > 0 ? "+" : "") + s.value + (s.interval.empty() ? "" : " ± " + s.interval) + " (" + n_pairs + ")";
    v.resolves = effect > 0 && d.half_width <= 0.7 * effect;
  } else {
    v.detail = head + short_number(d.mean) + " (" + pairs_text(v.seeds) + "); one seed gives no interval";
    v.difference = signed_number(d.mean) + " (one seed)";
  }

  // Censored times (a seed that never reached the target counts at its end)
  // are lower bounds. The decision stands only when moving every censored
  // time later could not undo it: a check that holds with them holds
  // conservatively, one that fails only because of them is inconclusive.
  bool any_censored = false, later_raises = false, later_lowers = false;
  for (size_t k = 0; k < per_seed.size(); ++k)
    for (const auto& name : names) {
      const RunMetrics& r = per_seed[k].at(name);
      if (r.reached || r.ttt < 0) continue;
      auto later = per_seed[k];
      later[name].ttt = 2 * r.ttt + 1;
      const auto [l, rr] = sides_of(check, later);
      const double moved = paired_difference(l, rr) - differences[k];
      // Only a censored time the check uses (it moves the difference) counts.
      any_censored = any_censored || moved != 0;
      later_raises = later_raises || moved > 0;
      later_lowers = later_lowers || moved < 0 || !std::isfinite(moved);
    }
  if (any_censored && v.outcome != ClaimVerdict::Inconclusive) {
    // A "<" that holds (or a ">" that fails) is undone by a larger
    // difference; the other two by a smaller one.
    const bool undone_by_raising = (op[0] == '<') == (v.outcome == ClaimVerdict::Holds);
    const bool stands = undone_by_raising ? !later_raises : !later_lowers;
    if (stands) {
      v.detail += "; " + std::string(outcome_name(v.outcome)) +
                  " conservatively (a seed that never reached the target counts at its run's end, a lower bound)";
    } else {
      v.detail += "; it " + std::string(outcome_name(v.outcome)) +
                  " only because a seed that never reached the target counts at its run's end (a lower bound): "
                  "inconclusive";
      v.outcome = ClaimVerdict::Inconclusive;
    }
  }

  // The effect the check is meant to resolve (ALGORITHMS.md section 9,
  // refinement 2): a half-width <= 0.7 e gives about 80% power against it.
  if (effect > 0 && exact) v.detail += "; exact, so it resolves any effect (stated: " + short_number(effect) + ")";
  if (effect > 0 && !exact && d.has_interval()) {
    if (v.resolves)
      v.detail += "; half-width " + short_number(d.half_width) + " <= 0.7 x " + short_number(effect) +
                  ": resolves an effect of " + short_number(effect);
    else
      v.detail += "; half-width " + short_number(d.half_width) + " > 0.7 x " + short_number(effect) +
                  ": does not resolve an effect of " + short_number(effect);
    if (v.outcome == ClaimVerdict::Inconclusive && !any_censored && d.low() > -effect && d.high() < effect) {
      v.outcome = ClaimVerdict::Equivalent;
      v.detail += "; equivalent within " + short_number(effect) + ": no difference as large as " +
                  short_number(effect) + " (the interval lies inside ±" + short_number(effect) + ")";
    }
  }
  // Only seeds narrow a paired interval (every evaluation covers the whole
  // validation split), so an undecided one asks for more of them: enough to
  // resolve the effect (half-width 0.7 e) or to exclude 0 at the difference
  // seen (|mean|), whichever needs fewer, among the goals not yet reached
  // (R7's delay check had a half-width of 0.013 and was told 4 pairs would
  // narrow it to 0.014).
  if (v.outcome == ClaimVerdict::Inconclusive && !any_censored) {
    if (v.seeds < 2) {
      v.detail += "; more seeds (K >= 3) needed";
    } else if (d.has_interval()) {
      double goal = 0;
      for (const double g : {std::fabs(d.mean), 0.7 * effect})
        if (g < d.half_width) goal = std::max(goal, g);
      if (goal > 0)
        v.detail += "; more seeds: about " + std::to_string(seeds_for(d.half_width, v.seeds, goal)) +
                    " pairs would narrow the half-width to " + short_number(goal) + " (it shrinks as 1/sqrt(K))";
    }
  }
  return v;
}

}  // namespace atl
