// The Brown corpus reader's text clean-up (private to the data area; tests use it).
#pragma once

#include <string>

namespace atl {

// Strips part-of-speech tags from one Brown file's text ("The/at" -> "The")
// and normalises white space (paragraphs joined by one newline).
std::string strip_brown_tags(const std::string& tagged);

}  // namespace atl
