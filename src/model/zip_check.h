// Whether a zip archive (a TorchScript module file) is intact: every entry's
// data decompress to its size and match its CRC-32. LibTorch reads module
// files without this check (src/model/zip_check.cpp says what that costs).
#pragma once

#include <cstdint>
#include <string>

namespace atl {

// The number of entries; throws std::runtime_error starting with `source`
// and naming the damaged part otherwise.
int64_t check_zip_archive(const std::string& bytes, const std::string& source);

}  // namespace atl
