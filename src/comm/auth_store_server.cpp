// The rendezvous store's server: one thread, non-blocking sockets, every
// length bounded, every connection proving the job token before it is read
// (see auth_store.h for the guarantees, auth_wire.h for the format).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <list>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "comm/auth_store.h"
#include "comm/auth_wire.h"
#include "comm/tcp_address.h"

namespace atl {

using Clock = std::chrono::steady_clock;
using wire::Op;
using wire::Status;

namespace {

std::string peer_name(const sockaddr_storage& a) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    port = ntohs(v6->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// A blocking request's wait: at most a day, 0 meaning c10d's "no timeout".
Clock::time_point wait_deadline(uint64_t timeout_ms) {
  const uint64_t day_ms = 86400ull * 1000;
  return Clock::now() + std::chrono::milliseconds(timeout_ms == 0 ? day_ms : std::min(timeout_ms, day_ms));
}

// A decimal int64 (as add() stores them); false for anything else.
bool parse_int64(const std::string& s, int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size() || std::isspace(static_cast<unsigned char>(s[0]))) return false;
  out = v;
  return true;
}

struct Conn {
  int fd = -1;
  std::string peer;
  enum class Phase { Proving, Ready, Closing } phase = Phase::Proving;
  Bytes server_nonce, session;
  uint64_t recv_seq = 0, send_seq = 0;
  std::string in, out;
  Clock::time_point opened, message_began;
  bool dropped = false;
  // A get or wait whose keys are not all there yet.
  bool waiting = false;
  Op wait_op = Op::Wait;
  std::vector<std::string> wait_keys;
  Clock::time_point wait_until;
};

}  // namespace

struct AuthStoreServer::Impl {
  Bytes key;
  AuthStoreLimits limits;
  int listen_fd = -1, wake_read = -1, wake_write = -1, port = 0;
  std::thread thread;
  std::list<Conn> conns;
  std::unordered_map<std::string, std::string> data;
  size_t data_bytes = 0;
  Clock::time_point accept_paused_until{};
  mutable std::mutex stats_mu;
  Stats stats;

  size_t max_body() const { return limits.max_key_bytes + 2 * limits.max_value_bytes + 64; }

  void listen_on(const std::string& host, int want_port);
  void run();
  void accept_new();
  void drop(Conn& c) {
    if (c.dropped) return;
    c.dropped = true;
    std::lock_guard<std::mutex> g(stats_mu);
    if (c.phase == Conn::Phase::Ready) --stats.clients;
  }
  void misbehaved(Conn& c) {
    drop(c);
    std::lock_guard<std::mutex> g(stats_mu);
    ++stats.dropped;
  }
  void read_from(Conn& c);
  void flush(Conn& c);
  void prove(Conn& c);
  void serve(Conn& c);
  void handle(Conn& c, std::string_view body);
  void reply(Conn& c, const std::string& body) {
    c.out += wire::seal(c.session, 'S', c.send_seq++, body);
    if (c.out.size() > 4 * max_body()) misbehaved(c);  // it does not read its replies
  }
  void reply_status(Conn& c, Status s, const std::string& text = {}) {
    wire::Writer w;
    w.u8(static_cast<uint8_t>(s));
    if (!text.empty()) w.text(text);
    reply(c, w.take());
  }
  bool holds(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(), [&](const std::string& k) { return data.count(k) != 0; });
  }
  // Stores key = value within the limits; false (and an error reply) if not.
  bool put(Conn& c, const std::string& k, const std::string& v);
  void answer_waiter(Conn& c);
  void answer_waiters();
  void check_deadlines();
};

void AuthStoreServer::Impl::listen_on(const std::string& host, int want_port) {
  std::string why;
  const AddressList found = resolve_tcp(host, want_port, why);
  if (!found) throw std::runtime_error("cannot resolve MASTER_ADDR " + host + ": " + why);
  why = "no address";
  for (const addrinfo* a = found.get(); a != nullptr && listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      listen_fd = fd;
      sockaddr_storage bound{};
      socklen_t len = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
      port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
      break;
    }
    why = std::strerror(errno);
    if (errno == EADDRNOTAVAIL)
      why += " (MASTER_ADDR must be an address of rank 0's host: the store listens on that interface only)";
    if (errno == EADDRINUSE) why += " (is MASTER_PORT in use by another job? pick another port)";
    ::close(fd);
  }
  if (listen_fd < 0)
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(want_port) + ": " + why);
}

void AuthStoreServer::Impl::accept_new() {
  // At most max_pending at a time, so the dropped are closed (at the end of
  // the loop's turn) before more descriptors are taken.
  for (size_t taken = 0; taken < limits.max_pending; ++taken) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        accept_paused_until = Clock::now() + std::chrono::milliseconds(100);  // out of descriptors: back off
      return;                                                                 // EAGAIN and the rest: later
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    size_t proving = 0, clients = 0;
    Conn* oldest = nullptr;
    for (Conn& c : conns) {
      if (c.dropped) continue;
      if (c.phase == Conn::Phase::Ready) {
        ++clients;
      } else {
        ++proving;
        if (oldest == nullptr) oldest = &c;
      }
    }
    {
      std::lock_guard<std::mutex> g(stats_mu);
      ++stats.accepted;
    }
    if (clients >= limits.max_clients && proving >= limits.max_pending) {
      ::close(fd);
      continue;
    }
    if (proving >= limits.max_pending && oldest != nullptr) misbehaved(*oldest);  // the oldest stranger goes
    Conn& c = conns.emplace_back();
    c.fd = fd;
    c.peer = peer_name(addr);
    c.opened = Clock::now();
    c.server_nonce = random_bytes(wire::kNonceBytes);
    c.out.append(wire::kMagic);
    c.out.append(as_text(c.server_nonce));
  }
}

void AuthStoreServer::Impl::read_from(Conn& c) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
    if (n == 0) return drop(c);  // closed by the peer
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) drop(c);
      return;
    }
    if (c.in.empty()) c.message_began = Clock::now();
    c.in.append(buf, size_t(n));
    // Before the proof only the client's hello may come; after it, at most
    // one message of the largest allowed size is ever buffered.
    const size_t cap = c.phase == Conn::Phase::Proving ? wire::kClientHelloBytes : wire::kFrameOverhead + max_body();
    if (c.in.size() > cap) return misbehaved(c);
    if (c.phase == Conn::Phase::Proving) prove(c);
    if (c.phase == Conn::Phase::Ready && !c.dropped) serve(c);
    if (c.dropped || c.phase == Conn::Phase::Closing) return;
  }
}

void AuthStoreServer::Impl::prove(Conn& c) {
  const size_t magic = std::min(c.in.size(), wire::kMagic.size());
  if (c.in.compare(0, magic, wire::kMagic.substr(0, magic)) != 0) return misbehaved(c);  // not atoll
  if (c.in.size() < wire::kClientHelloBytes) return;
  const Bytes client_nonce(c.in.begin() + wire::kMagic.size(), c.in.begin() + wire::kMagic.size() + wire::kNonceBytes);
  const Bytes proof(c.in.begin() + wire::kMagic.size() + wire::kNonceBytes, c.in.end());
  c.in.clear();
  if (!equal_in_constant_time(proof, wire::client_proof(key, c.server_nonce, client_nonce))) {
    // An atoll rank with another token: tell it so (unauthenticated, so only
    // ever used for its error message) and close once that is sent.
    c.out.append(wire::kRefused);
    c.phase = Conn::Phase::Closing;
    std::lock_guard<std::mutex> g(stats_mu);
    ++stats.token_refusals;
    stats.last_refusal = "a process at " + c.peer + " tried to join with another job token";
    return;
  }
  {
    std::lock_guard<std::mutex> g(stats_mu);
    if (size_t(stats.clients) >= limits.max_clients) {
      ++stats.dropped;
      c.dropped = true;
      return;
    }
  }
  c.out.append(as_text(wire::server_proof(key, c.server_nonce, client_nonce)));
  c.session = wire::session_key(key, c.server_nonce, client_nonce);
  c.phase = Conn::Phase::Ready;
  std::lock_guard<std::mutex> g(stats_mu);
  ++stats.clients;
}

void AuthStoreServer::Impl::serve(Conn& c) {
  while (!c.dropped && !c.waiting && c.in.size() >= wire::kFrameLengthBytes) {
    const uint64_t n = wire::declared_length(c.in);
    if (n > max_body()) return misbehaved(c);
    if (c.in.size() < wire::kFrameOverhead + n) return;
    const std::string_view frame(c.in.data(), wire::kFrameOverhead + n);
    if (!wire::verify(c.session, 'C', c.recv_seq, frame)) return misbehaved(c);
    ++c.recv_seq;
    const std::string body(frame.substr(wire::kFrameLengthBytes, n));
    c.in.erase(0, frame.size());
    c.message_began = Clock::now();
    try {
      handle(c, body);
    } catch (const wire::ProtocolError&) {
      return misbehaved(c);
    }
  }
}

bool AuthStoreServer::Impl::put(Conn& c, const std::string& k, const std::string& v) {
  const auto it = data.find(k);
  const size_t old = it == data.end() ? 0 : it->first.size() + it->second.size();
  const size_t now = k.size() + v.size();
  if (it == data.end() && data.size() >= limits.max_keys) {
    reply_status(c, Status::Error, "the store holds its limit of " + std::to_string(limits.max_keys) + " keys");
    return false;
  }
  if (data_bytes - old + now > limits.max_total_bytes) {
    reply_status(c, Status::Error, "the store holds its limit of " + std::to_string(limits.max_total_bytes) + " bytes");
    return false;
  }
  data_bytes = data_bytes - old + now;
  data[k] = v;
  return true;
}

void AuthStoreServer::Impl::handle(Conn& c, std::string_view body) {
  const wire::Request q = wire::parse_request(body, {limits.max_key_bytes, limits.max_value_bytes});
  wire::Writer w;
  switch (q.op) {
    case Op::Set:
      if (put(c, q.key, q.value)) reply_status(c, Status::Ok);
      return answer_waiters();
    case Op::Get:
    case Op::Wait:
      c.wait_keys = q.op == Op::Get ? std::vector<std::string>{q.key} : q.keys;
      c.wait_until = wait_deadline(q.timeout_ms);
      c.wait_op = q.op;
      c.waiting = true;
      return answer_waiter(c);
    case Op::Add: {
      int64_t v = 0;
      if (const auto it = data.find(q.key); it != data.end() && !parse_int64(it->second, v))
        return reply_status(c, Status::Error,
                            "add() on key '" + q.key + "', which holds a value that is not an integer");
      if (__builtin_add_overflow(v, q.delta, &v))
        return reply_status(c, Status::Error, "add() overflows key '" + q.key + "'");
      if (!put(c, q.key, std::to_string(v))) return;
      reply(c, w.u8(uint8_t(Status::Ok)).u64(uint64_t(v)).take());
      return answer_waiters();
    }
    case Op::CompareSet: {
      const auto it = data.find(q.key);
      // c10d's semantics: a missing key is set when `expected` is empty;
      // otherwise the caller gets `expected` back and nothing changes.
      if (it == data.end() ? q.expected.empty() : it->second == q.expected) {
        if (!put(c, q.key, q.value)) return;
        reply(c, w.u8(uint8_t(Status::Ok)).text(q.value).take());
        return answer_waiters();
      }
      return reply(c, w.u8(uint8_t(Status::Ok)).text(it == data.end() ? q.expected : it->second).take());
    }
    case Op::Delete: {
      const auto it = data.find(q.key);
      const bool found = it != data.end();
      if (found) {
        data_bytes -= it->first.size() + it->second.size();
        data.erase(it);
      }
      return reply(c, w.u8(uint8_t(Status::Ok)).u8(found ? 1 : 0).take());
    }
    case Op::Check:
      return reply(c, w.u8(uint8_t(Status::Ok)).u8(holds(q.keys) ? 1 : 0).take());
    case Op::NumKeys:
      return reply(c, w.u8(uint8_t(Status::Ok)).u64(data.size()).take());
  }
}

void AuthStoreServer::Impl::answer_waiter(Conn& c) {
  if (!c.waiting || c.dropped || !holds(c.wait_keys)) return;
  c.waiting = false;
  if (c.wait_op == Op::Get)
    reply(c, wire::Writer().u8(uint8_t(Status::Ok)).text(data.at(c.wait_keys[0])).take());
  else
    reply_status(c, Status::Ok);
  serve(c);  // a request that came in behind it
}

void AuthStoreServer::Impl::answer_waiters() {
  for (Conn& c : conns) answer_waiter(c);
}

void AuthStoreServer::Impl::check_deadlines() {
  const Clock::time_point now = Clock::now();
  for (Conn& c : conns) {
    if (c.dropped) continue;
    if (c.phase == Conn::Phase::Proving && now - c.opened > seconds(limits.handshake_seconds))
      misbehaved(c);
    else if (c.phase == Conn::Phase::Closing && now - c.opened > seconds(limits.handshake_seconds))
      drop(c);
    else if (c.phase == Conn::Phase::Ready && !c.waiting && !c.in.empty() &&
             now - c.message_began > seconds(limits.message_seconds))
      misbehaved(c);
    else if (c.waiting && now > c.wait_until) {
      c.waiting = false;
      reply_status(c, Status::TimedOut);
      serve(c);
    }
  }
}

void AuthStoreServer::Impl::flush(Conn& c) {
  while (!c.out.empty()) {
    const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) drop(c);
      return;
    }
    c.out.erase(0, size_t(n));
  }
  if (c.phase == Conn::Phase::Closing) drop(c);  // the refusal is out
}

void AuthStoreServer::Impl::run() {
  std::vector<pollfd> fds;
  std::vector<Conn*> order;
  for (;;) {
    fds.clear();
    order.clear();
    fds.push_back({wake_read, POLLIN, 0});
    const bool accepting = Clock::now() >= accept_paused_until;
    fds.push_back({accepting ? listen_fd : -1, POLLIN, 0});
    for (Conn& c : conns) {
      short events = POLLIN;
      if (c.phase == Conn::Phase::Closing) events = 0;
      if (!c.out.empty()) events |= POLLOUT;
      fds.push_back({c.fd, events, 0});
      order.push_back(&c);
    }
    // Deadlines are checked at least every 50 ms.
    if (::poll(fds.data(), fds.size(), 50) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;  // stop
    for (size_t i = 0; i < order.size(); ++i) {
      Conn& c = *order[i];
      const short ev = fds[i + 2].revents;
      if (ev & POLLNVAL) drop(c);
      if (!c.dropped && (ev & (POLLIN | POLLERR | POLLHUP))) read_from(c);
      if (!c.dropped) flush(c);
    }
    if (fds[1].revents & POLLIN) accept_new();
    check_deadlines();
    for (Conn& c : conns)
      if (!c.dropped && !c.out.empty()) flush(c);
    for (auto it = conns.begin(); it != conns.end();) {
      if (it->dropped) {
        ::close(it->fd);
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Conn& c : conns) ::close(c.fd);
  conns.clear();
}

AuthStoreServer::AuthStoreServer(const std::string& host, int port, Bytes key, AuthStoreLimits limits)
    : impl_(std::make_unique<Impl>()) {
  impl_->key = std::move(key);
  impl_->limits = limits;
  impl_->listen_on(host, port);
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(impl_->listen_fd);
    throw std::runtime_error(std::string("cannot create the store's wake-up pipe: ") + std::strerror(errno));
  }
  impl_->wake_read = p[0];
  impl_->wake_write = p[1];
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

AuthStoreServer::~AuthStoreServer() {
  const char x = 1;
  (void)!::write(impl_->wake_write, &x, 1);
  impl_->thread.join();
  ::close(impl_->listen_fd);
  ::close(impl_->wake_read);
  ::close(impl_->wake_write);
}

int AuthStoreServer::port() const { return impl_->port; }

AuthStoreServer::Stats AuthStoreServer::stats() const {
  std::lock_guard<std::mutex> g(impl_->stats_mu);
  return impl_->stats;
}

}  // namespace atl
