// The rendezvous wire format (see auth_wire.h).
#include "comm/auth_wire.h"

namespace atl::wire {
namespace {

std::string_view view(const Bytes& b) { return as_text(b); }

std::string le_bytes(uint64_t v, size_t bytes) {
  std::string out(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

}  // namespace

Bytes client_proof(const Bytes& key, const Bytes& ns, const Bytes& nc) {
  return hmac_sha256(key, {"atoll rendezvous client", view(ns), view(nc)});
}
Bytes server_proof(const Bytes& key, const Bytes& ns, const Bytes& nc) {
  return hmac_sha256(key, {"atoll rendezvous server", view(nc), view(ns)});
}
Bytes session_key(const Bytes& key, const Bytes& ns, const Bytes& nc) {
  return hmac_sha256(key, {"atoll rendezvous session", view(ns), view(nc)});
}

std::string seal(const Bytes& session, char direction, uint64_t seq, std::string_view body) {
  const std::string length = le_bytes(body.size(), kFrameLengthBytes);
  const Bytes mac = hmac_sha256(session, {std::string_view(&direction, 1), le_bytes(seq, 8), length, body});
  std::string out = length;
  out.append(body);
  out.append(view(mac));
  return out;
}

uint32_t declared_length(std::string_view f) {
  uint32_t n = 0;
  for (size_t i = 0; i < kFrameLengthBytes; ++i) n |= uint32_t(static_cast<uint8_t>(f[i])) << (8 * i);
  return n;
}

bool verify(const Bytes& session, char direction, uint64_t seq, std::string_view frame) {
  if (frame.size() < kFrameOverhead) return false;
  const std::string_view length = frame.substr(0, kFrameLengthBytes);
  const std::string_view body = frame.substr(kFrameLengthBytes, frame.size() - kFrameOverhead);
  if (declared_length(length) != body.size()) return false;
  const std::string_view mac = frame.substr(frame.size() - kHmacBytes);
  const Bytes want = hmac_sha256(session, {std::string_view(&direction, 1), le_bytes(seq, 8), length, body});
  return equal_in_constant_time(want, Bytes(mac.begin(), mac.end()));
}

Writer& Writer::u8(uint8_t v) {
  out_ += static_cast<char>(v);
  return *this;
}
Writer& Writer::u64(uint64_t v) {
  out_ += le_bytes(v, 8);
  return *this;
}
Writer& Writer::text(std::string_view s) {
  out_ += le_bytes(s.size(), 4);
  out_.append(s);
  return *this;
}

void Reader::need(size_t n) const {
  if (in_.size() - pos_ < n)
    throw ProtocolError("a message ends " + std::to_string(n - (in_.size() - pos_)) + " byte(s) early");
}
uint8_t Reader::u8() {
  need(1);
  return static_cast<uint8_t>(in_[pos_++]);
}
uint64_t Reader::u64() {
  need(8);
  uint64_t v = 0;
  for (size_t i = 0; i < 8; ++i) v |= uint64_t(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
  pos_ += 8;
  return v;
}
std::string Reader::text(size_t max) {
  need(4);
  uint64_t n = 0;
  for (size_t i = 0; i < 4; ++i) n |= uint64_t(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
  pos_ += 4;
  if (n > max) throw ProtocolError("a string of " + std::to_string(n) + " bytes (at most " + std::to_string(max) + ")");
  need(size_t(n));
  std::string s(in_.substr(pos_, size_t(n)));
  pos_ += size_t(n);
  return s;
}

std::string encode_request(const Request& r) {
  Writer w;
  w.u8(static_cast<uint8_t>(r.op));
  auto keys = [&] {
    w.u64(r.keys.size());
    for (const auto& k : r.keys) w.text(k);
  };
  switch (r.op) {
    case Op::Set:
      w.text(r.key).text(r.value);
      break;
    case Op::Get:
      w.text(r.key).u64(r.timeout_ms);
      break;
    case Op::Add:
      w.text(r.key).u64(static_cast<uint64_t>(r.delta));
      break;
    case Op::CompareSet:
      w.text(r.key).text(r.expected).text(r.value);
      break;
    case Op::Delete:
      w.text(r.key);
      break;
    case Op::Check:
      keys();
      break;
    case Op::NumKeys:
      break;
    case Op::Wait:
      keys(), w.u64(r.timeout_ms);
      break;
  }
  return w.take();
}

Request parse_request(std::string_view body, const RequestLimits& limits) {
  Reader in(body);
  Request r;
  r.op = static_cast<Op>(in.u8());
  auto keys = [&] {
    const uint64_t count = in.u64();
    if (count > in.remaining() / 4) throw ProtocolError("more keys than the message holds");
    for (uint64_t i = 0; i < count; ++i) r.keys.push_back(in.text(limits.max_key_bytes));
  };
  switch (r.op) {
    case Op::Set:
      r.key = in.text(limits.max_key_bytes);
      r.value = in.text(limits.max_value_bytes);
      break;
    case Op::Get:
      r.key = in.text(limits.max_key_bytes);
      r.timeout_ms = in.u64();
      break;
    case Op::Add:
      r.key = in.text(limits.max_key_bytes);
      r.delta = static_cast<int64_t>(in.u64());
      break;
    case Op::CompareSet:
      r.key = in.text(limits.max_key_bytes);
      r.expected = in.text(limits.max_value_bytes);
      r.value = in.text(limits.max_value_bytes);
      break;
    case Op::Delete:
      r.key = in.text(limits.max_key_bytes);
      break;
    case Op::Check:
      keys();
      break;
    case Op::NumKeys:
      break;
    case Op::Wait:
      keys();
      r.timeout_ms = in.u64();
      break;
    default:
      throw ProtocolError("an unknown request");
  }
  if (!in.at_end()) throw ProtocolError("trailing bytes in a request");
  return r;
}

}  // namespace atl::wire
