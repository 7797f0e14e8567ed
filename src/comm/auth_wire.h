// The wire format of the authenticated rendezvous (auth_store.h), shared by
// its server and client: the handshake's proofs, the sealed frames, and the
// request and reply bodies with bounds-checked readers.
//
// Handshake (all fixed sizes):
//   server -> client  kMagic, Ns                     (32 random bytes)
//   client -> server  kMagic, Nc, HMAC(K, "client" Ns Nc)
//   server -> client  HMAC(K, "server" Nc Ns)        (or kRefused and close)
//   both              session key S = HMAC(K, "session" Ns Nc)
// Frames after it:    u32 n (little-endian), body (n bytes),
//                     HMAC(S, direction seq n body)   direction 'C' or 'S'
// where seq counts the frames each way from 0. Request body: Op, then its
// fields; reply body: Status, then the op's result (or an error text).
// Strings are a u32 length and bytes; integers are little-endian.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "util/crypto.h"

namespace atl::wire {

constexpr std::string_view kMagic = "ATOLL-RDV1";
constexpr std::string_view kRefused = "ATOLL-REFUSED";
constexpr size_t kNonceBytes = 32;
constexpr size_t kServerHelloBytes = kMagic.size() + kNonceBytes;
constexpr size_t kClientHelloBytes = kMagic.size() + kNonceBytes + kHmacBytes;
constexpr size_t kFrameLengthBytes = 4;
constexpr size_t kFrameOverhead = kFrameLengthBytes + kHmacBytes;

enum class Op : uint8_t { Set = 1, Get, Add, CompareSet, Delete, Check, NumKeys, Wait };
enum class Status : uint8_t { Ok = 0, Error = 1, TimedOut = 2 };

Bytes client_proof(const Bytes& key, const Bytes& server_nonce, const Bytes& client_nonce);
Bytes server_proof(const Bytes& key, const Bytes& server_nonce, const Bytes& client_nonce);
Bytes session_key(const Bytes& key, const Bytes& server_nonce, const Bytes& client_nonce);

// `body` framed and sealed by the sender `direction` ('C' or 'S') as its
// frame number `seq`.
std::string seal(const Bytes& session, char direction, uint64_t seq, std::string_view body);
// The body length a frame's first kFrameLengthBytes declare.
uint32_t declared_length(std::string_view frame_start);
// True if `frame` (length, body, MAC) carries the right MAC for (direction, seq).
bool verify(const Bytes& session, char direction, uint64_t seq, std::string_view frame);

// A malformed body (from a peer that proved the token: a bug or a rogue rank).
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A decoded request. Which fields an op uses: Set key, value; Get key,
// timeout_ms; Add key, delta; CompareSet key, expected, value; Delete key;
// Check keys; NumKeys none; Wait keys, timeout_ms (0: no timeout).
struct Request {
  Op op = Op::NumKeys;
  std::string key, value, expected;
  std::vector<std::string> keys;
  int64_t delta = 0;
  uint64_t timeout_ms = 0;
  bool operator==(const Request& o) const {
    return op == o.op && key == o.key && value == o.value && expected == o.expected && keys == o.keys &&
           delta == o.delta && timeout_ms == o.timeout_ms;
  }
};
struct RequestLimits {
  size_t max_key_bytes, max_value_bytes;
};
std::string encode_request(const Request& r);
// Throws ProtocolError for an unknown op, a string over its limit, a count of
// keys the body cannot hold, a short body or trailing bytes; allocates no
// more than the body's size.
Request parse_request(std::string_view body, const RequestLimits& limits);

class Writer {
 public:
  Writer& u8(uint8_t v);
  Writer& u64(uint64_t v);
  Writer& text(std::string_view s);  // u32 length, then the bytes
  std::string&& take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view body) : in_(body) {}
  uint8_t u8();
  uint64_t u64();
  // A string of at most `max` bytes; a longer declared length is refused
  // before anything is copied.
  std::string text(size_t max);
  bool at_end() const { return pos_ == in_.size(); }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  void need(size_t n) const;
  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace atl::wire
