// How validate()'s checks word a problem, shared by every area that checks
// its own section (config's, compress's codec keys, each strategy's rules),
// so one report reads the same whoever wrote a line of it.
// Torch-free: the fuzz build compiles the checks without LibTorch.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace atl {

// "a | b | c": how a key's allowed values are listed in help and errors.
inline std::string join_choices(const std::vector<std::string>& choices) {
  std::string s;
  for (const auto& c : choices) s += (s.empty() ? "" : " | ") + c;
  return s;
}

inline bool one_of(const std::string& v, const std::vector<std::string>& allowed) {
  for (const auto& a : allowed)
    if (v == a) return true;
  return false;
}

// Appends to a list of problems; validate() reports them all at once.
class Problems {
 public:
  explicit Problems(std::vector<std::string>& out) : out_(out) {}
  void need(bool ok, const std::string& msg) {
    if (!ok) out_.push_back(msg);
  }
  // "key = 'v': allowed values are a | b" unless v is one of `allowed`.
  void enum_check(const std::string& key, const std::string& v, const std::vector<std::string>& allowed) {
    need(one_of(v, allowed), key + " = '" + v + "': allowed values are " + join_choices(allowed));
  }
  void add(std::string msg) { out_.push_back(std::move(msg)); }

 private:
  std::vector<std::string>& out_;
};

}  // namespace atl
