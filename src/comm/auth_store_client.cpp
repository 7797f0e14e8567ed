// The rendezvous store's client, a c10d::Store (see auth_store.h): connects,
// proves the job token, then sends one sealed request at a time and checks
// every reply's MAC. Any failure but a timed-out wait closes the connection
// (its sequence numbers can no longer be trusted) and later calls say so.
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "comm/auth_store.h"
#include "comm/auth_wire.h"
#include "comm/tcp_address.h"

namespace atl {

using Clock = std::chrono::steady_clock;
using wire::Op;
using wire::Status;

namespace {

// Replies hold at most one value and a few integers.
constexpr size_t kMaxReplyBody = AuthStoreLimits{}.max_value_bytes + 64;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// Exactly `n` bytes by `deadline`; false on a timeout; throws on a closed or
// broken connection (`closed` says whether the peer closed it cleanly).
bool read_exactly(int fd, char* out, size_t n, Clock::time_point deadline, size_t* got = nullptr) {
  size_t have = 0;
  while (have < n) {
    pollfd p{fd, POLLIN, 0};
    const int rc = ::poll(&p, 1, remaining_ms(deadline));
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0) {
      if (got) *got = have;
      return false;
    }
    const ssize_t k = ::recv(fd, out + have, n - have, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) {
      if (got) *got = have;
      throw std::runtime_error(k == 0 ? "the connection was closed" : std::strerror(errno));
    }
    have += size_t(k);
  }
  if (got) *got = have;
  return true;
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t k = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) throw std::runtime_error(std::strerror(errno));
    bytes.remove_prefix(size_t(k));
  }
}

// Linux can connect a socket to itself when it dials a free local port that
// it also picks as the socket's own (TCP simultaneous open): a retry loop
// against a port in the ephemeral range, before rank 0 listens, can hit it.
bool connected_to_itself(int fd) {
  sockaddr_storage a{}, b{};
  socklen_t la = sizeof a, lb = sizeof b;
  return ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &la) == 0 &&
         ::getpeername(fd, reinterpret_cast<sockaddr*>(&b), &lb) == 0 && la == lb && std::memcmp(&a, &b, la) == 0;
}

// A connected socket to host:port, retrying refused connections until
// `deadline` (rank 0 may not listen yet); -1 with `why` set if none.
int connect_until(const std::string& host, int port, Clock::time_point deadline, std::string& why) {
  for (;;) {
    std::string resolve_error;
    const AddressList found = resolve_tcp(host, port, resolve_error);
    if (!found) why = "cannot resolve it: " + resolve_error;
    for (const addrinfo* a = found.get(); a != nullptr; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      int err = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
      if (err == EINPROGRESS) {
        pollfd p{fd, POLLOUT, 0};
        if (::poll(&p, 1, std::min(remaining_ms(deadline), 5000)) == 1) {
          socklen_t len = sizeof err;
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        } else {
          err = ETIMEDOUT;
        }
      }
      if (err == 0 && connected_to_itself(fd)) err = EADDRINUSE;  // see connected_to_itself
      if (err == 0) {
        ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        return fd;
      }
      why = std::strerror(err);
      ::close(fd);
    }
    if (remaining_ms(deadline) == 0) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(100, remaining_ms(deadline))));
  }
}

std::string seconds_text(std::chrono::milliseconds ms) {
  return std::to_string(ms.count() / 1000) + (ms.count() % 1000 ? "." + std::to_string(ms.count() % 1000 / 100) : "") +
         " s";
}

}  // namespace

AuthStoreClient::AuthStoreClient(const std::string& host, int port, Bytes key, std::chrono::milliseconds timeout)
    : c10d::Store(timeout), where_(host + ":" + std::to_string(port)) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::string why, hello(wire::kServerHelloBytes, '\0');
  bool greeted = false;
  // Until the server greets us: a connection closed before its greeting
  // (something else briefly held the port, or rank 0 restarting) is retried
  // like a refused one.
  for (;;) {
    fd_ = connect_until(host, port, deadline, why);
    if (fd_ < 0)
      throw std::runtime_error("no rendezvous store answered at " + where_ + " within " + seconds_text(timeout) + " (" +
                               why + ")");
    size_t got = 0;
    try {
      greeted = read_exactly(fd_, hello.data(), hello.size(), deadline, &got);
    } catch (const std::runtime_error& e) {
      why = e.what();
    }
    if (!greeted && got > 0)
      why =
          "the process listening there is not an atoll rendezvous (another program on "
          "MASTER_PORT?)";
    if (greeted || got > 0 || remaining_ms(deadline) == 0) break;
    ::close(fd_);
    fd_ = -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  try {
    if (!greeted && why.empty()) why = "no greeting within " + seconds_text(timeout);
    if (!greeted) throw std::runtime_error(why);
    if (hello.compare(0, wire::kMagic.size(), wire::kMagic) != 0)
      throw std::runtime_error(
          "the process listening there is not an atoll rendezvous (another program on "
          "MASTER_PORT?)");
    const Bytes server_nonce(hello.begin() + wire::kMagic.size(), hello.end());
    const Bytes client_nonce = random_bytes(wire::kNonceBytes);
    std::string mine(wire::kMagic);
    mine.append(as_text(client_nonce));
    mine.append(as_text(wire::client_proof(key, server_nonce, client_nonce)));
    write_all(fd_, mine);
    std::string answer(kHmacBytes, '\0');
    size_t got = 0;
    bool complete = false;
    try {
      complete = read_exactly(fd_, answer.data(), answer.size(), deadline, &got);
    } catch (const std::runtime_error&) {
      complete = false;  // closed: a refusal is shorter than a proof
    }
    if (!complete && answer.compare(0, got, wire::kRefused) == 0 && got == wire::kRefused.size())
      throw std::runtime_error(
          "rank 0 refused this process's job token: the ranks hold different tokens (is ATOLL_JOB_TOKEN_FILE, or "
          "ATOLL_JOB_TOKEN, the same on every host?)");
    if (!complete) throw std::runtime_error("it did not finish the handshake within " + seconds_text(timeout));
    if (!equal_in_constant_time(Bytes(answer.begin(), answer.end()),
                                wire::server_proof(key, server_nonce, client_nonce)))
      throw std::runtime_error("it does not hold this job's token (another job on this MASTER_PORT, or a stranger)");
    session_key_ = wire::session_key(key, server_nonce, client_nonce);
  } catch (const std::exception& e) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("the rendezvous store at " + where_ + ": " + e.what());
  }
}

AuthStoreClient::~AuthStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<uint8_t> AuthStoreClient::request(const std::string& body, std::chrono::milliseconds server_wait) {
  std::lock_guard<std::mutex> g(mu_);
  if (fd_ < 0)
    throw std::runtime_error("the connection to the rendezvous store at " + where_ +
                             " was closed after an earlier error");
  // The server answers a blocking request itself when its wait ends; past
  // that, the store's timeout is left for the answer to arrive.
  const Clock::time_point deadline = Clock::now() + server_wait + getTimeout();
  std::string reply_body;
  try {
    write_all(fd_, wire::seal(session_key_, 'C', send_seq_++, body));
    std::string frame(wire::kFrameLengthBytes, '\0');
    if (!read_exactly(fd_, frame.data(), frame.size(), deadline))
      throw std::runtime_error("no answer within " + seconds_text(server_wait + getTimeout()));
    const uint32_t n = wire::declared_length(frame);
    if (n > kMaxReplyBody) throw std::runtime_error("an answer of " + std::to_string(n) + " bytes (refused)");
    frame.resize(wire::kFrameOverhead + n);
    if (!read_exactly(fd_, frame.data() + wire::kFrameLengthBytes, n + kHmacBytes, deadline))
      throw std::runtime_error("an unfinished answer");
    if (!wire::verify(session_key_, 'S', recv_seq_++, frame))
      throw std::runtime_error("an answer without this job's MAC (forged or corrupted)");
    reply_body = frame.substr(wire::kFrameLengthBytes, n);
  } catch (const std::exception& e) {
    ::close(fd_);
    fd_ = -1;
    throw std::runtime_error("the rendezvous store at " + where_ + ": " + e.what());
  }
  wire::Reader r(reply_body);
  const auto status = static_cast<Status>(r.u8());
  if (status == Status::Error)
    throw std::runtime_error("the rendezvous store refused a request: " + r.text(kMaxReplyBody));
  if (status == Status::TimedOut)
    throw std::runtime_error("timed out after " + seconds_text(server_wait) +
                             " waiting for the rendezvous store's key(s)");
  const std::string rest = reply_body.substr(1);
  return std::vector<uint8_t>(rest.begin(), rest.end());
}

namespace {

std::string value_text(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }

// c10d's kNoTimeout (0) waits without end; the server caps a wait at a day.
std::chrono::milliseconds wait_limit(std::chrono::milliseconds t) {
  return t.count() == 0 ? std::chrono::milliseconds(86400000) : t;
}

std::string one_text(const std::vector<uint8_t>& reply) {
  const std::string s = value_text(reply);
  wire::Reader r(s);
  return r.text(kMaxReplyBody);
}

uint64_t one_u64(const std::vector<uint8_t>& reply) {
  const std::string s = value_text(reply);
  wire::Reader r(s);
  return r.u64();
}

void check_sizes(const std::string& key, size_t value_bytes) {
  const AuthStoreLimits limits;
  if (key.size() > limits.max_key_bytes || value_bytes > limits.max_value_bytes)
    throw std::invalid_argument("rendezvous store: key '" + key.substr(0, 64) + "' (" + std::to_string(key.size()) +
                                " bytes) or its value (" + std::to_string(value_bytes) + " bytes) is over the limit (" +
                                std::to_string(limits.max_key_bytes) + " and " +
                                std::to_string(limits.max_value_bytes) + " bytes)");
}

}  // namespace

void AuthStoreClient::set(const std::string& key, const std::vector<uint8_t>& value) {
  check_sizes(key, value.size());
  wire::Request q;
  q.op = Op::Set;
  q.key = key;
  q.value = value_text(value);
  request(wire::encode_request(q), {});
}

std::vector<uint8_t> AuthStoreClient::compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                                 const std::vector<uint8_t>& desired) {
  check_sizes(key, std::max(expected.size(), desired.size()));
  wire::Request q;
  q.op = Op::CompareSet;
  q.key = key;
  q.expected = value_text(expected);
  q.value = value_text(desired);
  const std::string v = one_text(request(wire::encode_request(q), {}));
  return std::vector<uint8_t>(v.begin(), v.end());
}

std::vector<uint8_t> AuthStoreClient::get(const std::string& key) {
  check_sizes(key, 0);
  wire::Request q;
  q.op = Op::Get;
  q.key = key;
  q.timeout_ms = uint64_t(getTimeout().count());
  const std::string v = one_text(request(wire::encode_request(q), wait_limit(getTimeout())));
  return std::vector<uint8_t>(v.begin(), v.end());
}

int64_t AuthStoreClient::add(const std::string& key, int64_t value) {
  check_sizes(key, 0);
  wire::Request q;
  q.op = Op::Add;
  q.key = key;
  q.delta = value;
  return static_cast<int64_t>(one_u64(request(wire::encode_request(q), {})));
}

bool AuthStoreClient::deleteKey(const std::string& key) {
  check_sizes(key, 0);
  wire::Request q;
  q.op = Op::Delete;
  q.key = key;
  const std::vector<uint8_t> r = request(wire::encode_request(q), {});
  return !r.empty() && r[0] != 0;
}

bool AuthStoreClient::check(const std::vector<std::string>& keys) {
  for (const auto& k : keys) check_sizes(k, 0);
  wire::Request q;
  q.op = Op::Check;
  q.keys = keys;
  const std::vector<uint8_t> r = request(wire::encode_request(q), {});
  return !r.empty() && r[0] != 0;
}

int64_t AuthStoreClient::getNumKeys() {
  return static_cast<int64_t>(one_u64(request(wire::encode_request(wire::Request{}), {})));
}

void AuthStoreClient::wait(const std::vector<std::string>& keys) { wait(keys, getTimeout()); }

void AuthStoreClient::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  for (const auto& k : keys) check_sizes(k, 0);
  wire::Request q;
  q.op = Op::Wait;
  q.keys = keys;
  q.timeout_ms = uint64_t(timeout.count());
  request(wire::encode_request(q), wait_limit(timeout));
}

}  // namespace atl
