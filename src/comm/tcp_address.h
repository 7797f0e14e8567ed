// getaddrinfo() for a TCP host and port, as the rendezvous store's server
// and client both need it (private to src/comm).
#pragma once

#include <netdb.h>
#include <sys/socket.h>

#include <memory>
#include <string>

namespace atl {

using AddressList = std::unique_ptr<addrinfo, decltype(&freeaddrinfo)>;

// The stream addresses of host:port (IPv4 or IPv6), or null with `why` set
// to the resolver's message.
inline AddressList resolve_tcp(const std::string& host, int port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    why = gai_strerror(rc);
    return AddressList(nullptr, &freeaddrinfo);
  }
  return AddressList(found, &freeaddrinfo);
}

}  // namespace atl
