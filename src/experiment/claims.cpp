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
#include <iterator>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

#include "atoll/experiment.h"
#include "atoll/net.h"

namespace atl {
namespace {

std::string short_number(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

const char* const kFunctions =
    " (functions: loss ppl bytes time corr util ttt of a run name; abs(x), min(x, y), max(x, y), "
    "copy_seconds(params, bytes_per_element, bits_per_second))";

class ClaimParser {
 public:
  ClaimParser(const std::string& text, const std::map<std::string, RunMetrics>& runs) : s_(text), runs_(runs) {}

  bool check(std::string& detail) {
    double left = sum();
    skip();
    std::string op;
    if (peek('<') || peek('>')) {
      op = s_[i_++];
      if (peek('=')) op += s_[i_++];
    }
    if (op.empty()) fail("expected a comparison (<, <=, >, >=)");
    const std::string left_text = detail_;
    detail_.clear();
    double right = sum();
    skip();
    if (i_ != s_.size()) fail("unexpected '" + s_.substr(i_) + "'");
    detail = left_text + " " + op + " " + detail_;
    if (op == "<") return left < right;
    if (op == "<=") return left <= right;
    if (op == ">") return left > right;
    return left >= right;
  }

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
    static const char* metrics[] = {"loss", "ppl", "bytes", "time", "corr", "util", "ttt"};
    for (const char* m : metrics) {
      if (name != m) continue;
      skip();
      const size_t start = i_;
      while (i_ < s_.size() && s_[i_] != ')') ++i_;
      std::string run = s_.substr(start, i_ - start);
      while (!run.empty() && std::isspace(static_cast<unsigned char>(run.back()))) run.pop_back();
      expect(')');
      auto it = runs_.find(run);
      if (it == runs_.end()) throw std::invalid_argument("claim check '" + s_ + "': run '" + run + "' has no results");
      const RunMetrics& r = it->second;
      double v = name == "loss" ? r.loss : name == "ppl" ? r.ppl : name == "bytes" ? r.bytes : name == "time" ? r.time
               : name == "corr" ? r.corr : name == "util" ? r.util : r.ttt;
      if (name == "ttt" && v < 0) v = std::numeric_limits<double>::infinity();
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
};

}  // namespace

bool evaluate_claim(const std::string& check, const std::map<std::string, RunMetrics>& runs, std::string& detail) {
  ClaimParser parser(check, runs);
  return parser.check(detail);
}

}  // namespace atl
