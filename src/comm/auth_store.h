// The rendezvous store of a real run, authenticated from the first byte.
//
// LibTorch 1.13's TCPStore listens on every interface, admits anyone, parses
// unauthenticated lengths (allocating what it is told), serves every client
// from one thread that a single partial message stalls, and aborts the
// process past ~1,000 connections (issue 33). This store replaces it:
//
// - The server (rank 0) listens on MASTER_ADDR's interface only.
// - Every connection first proves the job token, both ways (a mutual
//   HMAC-SHA256 challenge-response over fresh 32-byte nonces), before the
//   server reads a single request; a process without the token learns
//   nothing but that an atoll rendezvous is there.
// - Every message after that carries an HMAC under a per-connection session
//   key with a sequence number, so it cannot be forged, replayed or reordered.
// - Every length is checked against AuthStoreLimits before anything is
//   allocated; a connection that breaks a limit, sends a bad MAC, or leaves a
//   handshake or a message unfinished past its deadline is dropped; past
//   `max_pending` unproven connections the oldest is dropped, so a flood of
//   strangers cannot crowd out the ranks. One thread serves every connection
//   with non-blocking I/O, so no client can stall another.
// - Blocking reads (get, wait) time out on the server and are answered as
//   timed out, so a caller's connection stays usable after a timeout.
//
// The bytes are authenticated, not encrypted: anyone on the path can read
// the keys and values (the ranks' Gloo addresses, per-key config
// fingerprints). docs/SECURITY.md has the tunnel recipe for confidentiality.
//
// Thread-safety: AuthStoreServer runs its own thread; its accessors may be
// called from any thread. AuthStoreClient's operations are serialised by a
// mutex (one request in flight per connection).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "util/crypto.h"

namespace atl {

struct AuthStoreLimits {
  size_t max_key_bytes = 4096;
  size_t max_value_bytes = size_t(1) << 20;  // Gloo's address records and atoll's keys are < 1 KiB
  size_t max_keys = 100000;
  size_t max_total_bytes = size_t(64) << 20;  // keys and values held by the store
  size_t max_pending = 64;                    // connections still proving the token
  size_t max_clients = 1024;                  // connections that proved it
  double handshake_seconds = 5;               // to prove the token after connecting
  double message_seconds = 10;                // to finish a message once begun
};

class AuthStoreServer {
 public:
  // Listens on `host`:`port` (port 0: a free one, see port()). Throws saying
  // why (port in use, `host` not an address of this machine).
  AuthStoreServer(const std::string& host, int port, Bytes key, AuthStoreLimits limits = {});
  ~AuthStoreServer();  // stops serving and closes every connection
  AuthStoreServer(const AuthStoreServer&) = delete;
  AuthStoreServer& operator=(const AuthStoreServer&) = delete;

  int port() const;

  struct Stats {
    int64_t accepted = 0;        // connections accepted
    int64_t clients = 0;         // connections that proved the token, now open
    int64_t token_refusals = 0;  // atoll handshakes that proved another token
    int64_t dropped = 0;         // connections dropped for a broken limit, deadline or MAC
    std::string last_refusal;    // "a process at 127.0.0.1:40522 tried to join with another job token"
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class AuthStoreClient final : public c10d::Store {
 public:
  // Connects to the server at `host`:`port` (retrying until `timeout`: rank 0
  // may start later) and proves `key`. Throws naming the address and the
  // likely cause (no server, another job token, not an atoll rendezvous).
  AuthStoreClient(const std::string& host, int port, Bytes key, std::chrono::milliseconds timeout);
  ~AuthStoreClient() override;

  void set(const std::string& key, const std::vector<uint8_t>& value) override;
  std::vector<uint8_t> compareSet(const std::string& key, const std::vector<uint8_t>& expected,
                                  const std::vector<uint8_t>& desired) override;
  std::vector<uint8_t> get(const std::string& key) override;  // waits up to getTimeout()
  int64_t add(const std::string& key, int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  std::vector<uint8_t> request(const std::string& body, std::chrono::milliseconds server_wait);

  std::string where_;  // "host:port"
  int fd_ = -1;
  Bytes session_key_;
  uint64_t send_seq_ = 0, recv_seq_ = 0;
  std::mutex mu_;
};

}  // namespace atl
