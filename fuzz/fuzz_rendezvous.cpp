// libFuzzer target: the rendezvous store's request parser,
// wire::parse_request() (src/comm/auth_wire.cpp), which rank 0's store runs on
// every request from a connection that proved the job token (a rank with a
// bug, or a rogue one), and the frame check wire::verify().
//
// Input: byte 0 picks the reader: even = a request body, odd = a whole frame
// (length, body, MAC) checked against a fixed session key.
// For a request that parses: encode_request() and parse_request() again give
// the same request, and the parse allocated no string longer than the input.
// A frame built by a fuzzer cannot carry the right MAC: verify() must say
// false (a true would mean the MAC check is broken) and never crash.
//
// Expected: wire::ProtocolError. Findings: crashes, sanitizer reports, any
// other exception, a broken round trip, an accepted forged frame.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "comm/auth_wire.h"

namespace {

constexpr atl::wire::RequestLimits kLimits{4096, size_t(1) << 20};

void fail(const char* what) {
  std::fprintf(stderr, "fuzz_rendezvous: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 1) {
    static const atl::Bytes session(atl::kHmacBytes, 0x5a);
    if (atl::wire::verify(session, 'C', 0, rest)) fail("a frame the fuzzer made carries a valid MAC");
    return 0;
  }
  atl::wire::Request r;
  try {
    r = atl::wire::parse_request(rest, kLimits);
  } catch (const atl::wire::ProtocolError&) {
    return 0;
  }
  size_t longest = r.key.size() + r.value.size() + r.expected.size();
  for (const auto& k : r.keys) longest += k.size();
  if (longest > rest.size()) fail("parsed strings longer than the input");
  const std::string again = atl::wire::encode_request(r);
  if (!(atl::wire::parse_request(again, kLimits) == r)) fail("encode/parse round trip differs");
  return 0;
}
