// Text placed into the HTML report: escaped for HTML, or made safe inside a
// <script> element. Shared by the page (html.cpp) and its panels.
#pragma once

#include <string>

namespace atl {

inline std::string escape_html(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

// JSON placed inside <script>: "</" would end the element early.
inline std::string script_safe(std::string json) {
  for (size_t at = json.find("</"); at != std::string::npos; at = json.find("</", at + 2)) json.replace(at, 2, "<\\/");
  return json;
}

}  // namespace atl
