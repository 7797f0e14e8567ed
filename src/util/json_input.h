// JSON that comes from outside this process (files a user or an earlier run
// wrote, a peer's report): its nesting is bounded before anything walks it.
//
// nlohmann's parser and destructor are iterative, but dump(), copies and
// comparisons recurse once per level: a meta.json of 400,000 nested arrays
// parsed fine and then overflowed the stack when an error message dumped
// the value. No file or message atoll reads nests past a few levels.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace atl {

// Arrays and objects nested deeper than this are refused ("[]" is 1 level).
constexpr int kMaxJsonDepth = 64;

// Throws std::runtime_error naming `source` and the bound when `text` nests
// arrays and objects deeper than kMaxJsonDepth. A linear scan of the
// brackets outside strings, with no recursion and no allocation; malformed
// text is left for the parser to report.
void check_json_depth(std::string_view text, const std::string& source);

// check_json_depth(), then nlohmann::json::parse(text); the parser's own
// exceptions (json::parse_error) pass through.
nlohmann::json parse_json_input(const std::string& text, const std::string& source);

// A value for an error message: a number, bool or null as written, a
// string quoted and cut to 40 characters, "an array of N values" or "an
// object of N keys" (never the whole array or object: dumping it recurses
// and may be huge).
std::string describe_json_value(const nlohmann::json& value);

}  // namespace atl
