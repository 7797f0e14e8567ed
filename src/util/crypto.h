// The few cryptographic primitives atoll needs, all from OpenSSL 3 (never our
// own): HMAC-SHA256, random bytes from the OS's generator, and a comparison
// whose time does not depend on where two secrets differ.
//
// Thread-safety: functions only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace atl {

using Bytes = std::vector<uint8_t>;

constexpr size_t kHmacBytes = 32;  // HMAC-SHA256
constexpr size_t kSha256Bytes = 32;

// HMAC-SHA256 under `key` of the concatenation of `parts`.
Bytes hmac_sha256(const Bytes& key, std::initializer_list<std::string_view> parts);
// SHA-256 of the concatenation of `parts`.
Bytes sha256(std::initializer_list<std::string_view> parts);
// `n` bytes from OpenSSL's CSPRNG (seeded by the OS); throws if it fails.
Bytes random_bytes(size_t n);
// a == b, in time independent of their contents (CRYPTO_memcmp); false when
// the sizes differ.
bool equal_in_constant_time(const Bytes& a, const Bytes& b);

std::string_view as_text(const Bytes& b);
std::string to_hex(const Bytes& b);
// Hex digits (either case) to bytes; throws std::invalid_argument on an odd
// count or a character that is not a hex digit.
Bytes from_hex(std::string_view hex);

}  // namespace atl
