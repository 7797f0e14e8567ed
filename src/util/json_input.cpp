// Bounded nesting for JSON from outside (see json_input.h).
#include "util/json_input.h"

#include <stdexcept>

namespace atl {
namespace {

// The depth past the bound and where it was reached, or -1 if none.
int64_t too_deep_at(std::string_view text) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > kMaxJsonDepth) return static_cast<int64_t>(i);
        break;
      case ']':
      case '}':
        // An unbalanced close is the parser's to report; never below 0.
        if (depth > 0) --depth;
        break;
      default:
        break;
    }
  }
  return -1;
}

}  // namespace

void check_json_depth(std::string_view text, const std::string& source) {
  const int64_t at = too_deep_at(text);
  if (at >= 0)
    throw std::runtime_error(source + ": JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                             " levels of arrays and objects (at byte " + std::to_string(at) +
                             "); atoll reads JSON nested at most " + std::to_string(kMaxJsonDepth) + " levels deep");
}

nlohmann::json parse_json_input(const std::string& text, const std::string& source) {
  check_json_depth(text, source);
  return nlohmann::json::parse(text);
}

std::string describe_json_value(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::array:
      return "an array of " + std::to_string(value.size()) + (value.size() == 1 ? " value" : " values");
    case nlohmann::json::value_t::object:
      return "an object of " + std::to_string(value.size()) + (value.size() == 1 ? " key" : " keys");
    case nlohmann::json::value_t::string: {
      // Invalid UTF-8 is shown replaced, not thrown on (dump's default).
      const std::string& s = value.get_ref<const std::string&>();
      const std::string shown =
          nlohmann::json(s.substr(0, 40)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      return s.size() <= 40 ? shown : shown + " (cut from " + std::to_string(s.size()) + " bytes)";
    }
    default:
      return value.dump();
  }
}

}  // namespace atl
