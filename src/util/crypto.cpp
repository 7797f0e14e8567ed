// HMAC, random bytes and constant-time compares through OpenSSL 3 (see crypto.h).
#include "util/crypto.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <memory>
#include <stdexcept>

namespace atl {
namespace {

[[noreturn]] void openssl_failed(const char* what) {
  char buf[256] = {0};
  ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
  throw std::runtime_error(std::string("OpenSSL: ") + what + " failed: " + buf);
}

// EVP_MAC fetched once per process: fetching parses OpenSSL's provider
// tables, and the MAC object is immutable and shared by contexts.
EVP_MAC* hmac_algorithm() {
  static EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (mac == nullptr) openssl_failed("fetching HMAC");
  return mac;
}

}  // namespace

Bytes hmac_sha256(const Bytes& key, std::initializer_list<std::string_view> parts) {
  std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_new(hmac_algorithm()), &EVP_MAC_CTX_free);
  if (!ctx) openssl_failed("EVP_MAC_CTX_new");
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
  // A zero-length key is valid HMAC; OpenSSL wants a non-null pointer for it.
  static const uint8_t kEmpty = 0;
  if (EVP_MAC_init(ctx.get(), key.empty() ? &kEmpty : key.data(), key.size(), params) != 1)
    openssl_failed("EVP_MAC_init");
  for (std::string_view p : parts)
    if (EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(p.data()), p.size()) != 1)
      openssl_failed("EVP_MAC_update");
  Bytes out(kHmacBytes);
  size_t len = 0;
  if (EVP_MAC_final(ctx.get(), out.data(), &len, out.size()) != 1 || len != kHmacBytes) openssl_failed("EVP_MAC_final");
  return out;
}

Bytes sha256(std::initializer_list<std::string_view> parts) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx) openssl_failed("EVP_MD_CTX_new");
  if (EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) openssl_failed("EVP_DigestInit_ex");
  for (std::string_view p : parts)
    if (EVP_DigestUpdate(ctx.get(), p.data(), p.size()) != 1) openssl_failed("EVP_DigestUpdate");
  Bytes out(kSha256Bytes);
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx.get(), out.data(), &len) != 1 || len != kSha256Bytes) openssl_failed("EVP_DigestFinal_ex");
  return out;
}

Bytes random_bytes(size_t n) {
  Bytes out(n);
  if (n > 0 && RAND_bytes(out.data(), static_cast<int>(n)) != 1) openssl_failed("RAND_bytes");
  return out;
}

bool equal_in_constant_time(const Bytes& a, const Bytes& b) {
  return a.size() == b.size() && (a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0);
}

std::string_view as_text(const Bytes& b) { return std::string_view(reinterpret_cast<const char*>(b.data()), b.size()); }

std::string to_hex(const Bytes& b) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * b.size());
  for (uint8_t x : b) {
    out += kDigits[x >> 4];
    out += kDigits[x & 15];
  }
  return out;
}

Bytes from_hex(std::string_view hex) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (hex.size() % 2 != 0) throw std::invalid_argument("an odd number of hex digits");
  Bytes out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) throw std::invalid_argument("a character that is not a hex digit");
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return out;
}

}  // namespace atl
