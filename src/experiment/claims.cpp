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
#include "util/stats.h"

namespace atl {
namespace {

std::string short_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

const char* const kFunctions =
    " (functions: loss ppl bytes time corr update_correlation disagreement util ttt of a run name; "
    "abs(x), min(x, y), max(x, y), copy_seconds(params, bytes_per_element, bits_per_second))";

class ClaimParser {
 public:
  ClaimParser(const std::string& text, const std::map<std::string, RunMetrics>& runs) : s_(text), runs_(runs) {}

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
      if (name == "ttt" && v < 0) v = std::numeric_limits<double>::infinity();
      if (std::isnan(v))  // a comparison with NaN would quietly be false
        throw std::invalid_argument("claim check '" + s_ + "': run '" + run + "' has no " + name +
                                    " (one worker, strategy.correlation_every = 0, or no sync measured)");
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
  size_t i_ = 0;
  std::string detail_;
  std::set<std::string> names_;
};

std::string interval_text(const MeanInterval& d) {
  if (!d.has_interval()) return short_number(d.mean);
  return short_number(d.mean) + ", 95% interval [" + short_number(d.low()) + ", " + short_number(d.high()) + "]";
}

}  // namespace

bool evaluate_claim(const std::string& check, const std::map<std::string, RunMetrics>& runs, std::string& detail) {
  ClaimParser parser(check, runs);
  return parser.check(detail);
}

const char* outcome_name(ClaimVerdict::Outcome o) {
  return o == ClaimVerdict::Holds ? "holds" : o == ClaimVerdict::Fails ? "fails" : "inconclusive";
}

ClaimVerdict judge_claim(const std::string& check, const SeedMetrics& runs, double effect) {
  // The check on the settings' means over their seeds: checks the syntax,
  // finds the settings it names and gives the readable form.
  std::map<std::string, RunMetrics> means;
  for (const auto& [name, seeds] : runs) {
    if (seeds.empty()) continue;
    RunMetrics m;
    m.loss = m.ppl = m.bytes = m.time = m.corr = m.util = m.ttt = m.update_correlation = m.disagreement = 0;
    bool never = false;
    for (const RunMetrics& r : seeds) {
      m.loss += r.loss / double(seeds.size());
      m.ppl += r.ppl / double(seeds.size());
      m.bytes += r.bytes / double(seeds.size());
      m.time += r.time / double(seeds.size());
      m.corr += r.corr / double(seeds.size());
      m.update_correlation += r.update_correlation / double(seeds.size());
      m.disagreement += r.disagreement / double(seeds.size());
      m.util += r.util / double(seeds.size());
      m.ttt += r.ttt / double(seeds.size());
      never = never || r.ttt < 0;
    }
    if (never) m.ttt = -1;  // a seed that never reached the target: the mean never does
    means[name] = m;
  }
  ClaimParser on_means(check, means);
  ClaimVerdict v;
  double left = 0, right = 0;
  std::string shown;
  const std::string op = on_means.sides(left, right, shown);

  // Seeds every named setting ran, paired by run.seed.
  std::set<int64_t> common;
  bool first = true;
  for (const auto& name : on_means.names()) {
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
  std::vector<double> differences;
  for (int64_t seed : common) {
    std::map<std::string, RunMetrics> one;
    for (const auto& name : on_means.names())
      for (const RunMetrics& r : runs.at(name))
        if (r.seed == seed) one[name] = r;
    ClaimParser per_seed(check, one);
    double l = 0, r = 0;
    std::string unused;
    per_seed.sides(l, r, unused);
    differences.push_back(l - r);
  }
  v.seeds = static_cast<int>(differences.size());
  const MeanInterval d = mean_interval(differences);
  const Sign sign = interval_sign(differences);
  const bool less = op[0] == '<';
  if (sign == Sign::Below) v.outcome = less ? ClaimVerdict::Holds : ClaimVerdict::Fails;
  if (sign == Sign::Above) v.outcome = less ? ClaimVerdict::Fails : ClaimVerdict::Holds;
  v.detail = shown + " (means); left - right = " + interval_text(d) + " over " + std::to_string(v.seeds) +
             (v.seeds == 1 ? " seed" : " paired seeds");
  if (v.seeds < 2)
    v.detail += "; one seed gives no interval";
  else if (!d.has_interval() && sign == Sign::Unknown)
    v.detail += "; no interval (a run never reached the target in some seeds)";
  if (effect > 0 && d.has_interval())
    v.detail += d.half_width <= effect ? "; the interval's half-width " + short_number(d.half_width) +
                                             " resolves the stated effect " + short_number(effect)
                                       : "; the interval's half-width " + short_number(d.half_width) +
                                             " is wider than the stated effect " + short_number(effect) +
                                             ": more seeds or a larger evaluation needed";
  return v;
}

}  // namespace atl
