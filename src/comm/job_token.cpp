// The job token (see job_token.h).
#include "comm/job_token.h"

#include "atoll/dist.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace atl {
namespace {

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

}  // namespace

std::string new_job_token_text() { return to_hex(random_bytes(kJobTokenBytes)) + "\n"; }

void write_new_job_token(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::runtime_error("cannot create the token file " + path + ": " + std::strerror(errno) +
                             (errno == EEXIST ? " (a token file is never replaced: remove it first, or pick "
                                                "another name)"
                                              : ""));
  const std::string text = new_job_token_text();
  const bool ok =
      ::fchmod(fd, 0600) == 0 && ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) {
    ::unlink(path.c_str());
    throw std::runtime_error("cannot write the token file " + path + ": " + std::strerror(err));
  }
}

Bytes parse_job_token(const std::string& text, const std::string& source) {
  const std::string hex = trimmed(text);
  const std::string allowed = std::to_string(2 * kJobTokenBytes) + " to " + std::to_string(2 * kMaxJobTokenBytes) +
                              " hex digits, as `atoll token new FILE` writes";
  if (hex.size() < 2 * kJobTokenBytes || hex.size() > 2 * kMaxJobTokenBytes)
    throw std::invalid_argument(source + " holds " + std::to_string(hex.size()) + " characters; a job token is " +
                                allowed);
  try {
    return from_hex(hex);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(source + " holds " + e.what() + "; a job token is " + allowed);
  }
}

Bytes read_job_token_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open the job token file " + path + ": " + std::strerror(errno));
  struct stat st {};
  std::string text;
  bool ok = ::fstat(fd, &st) == 0;
  if (ok && !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error("the job token file " + path + " is not a regular file");
  }
  if (ok && (st.st_mode & 077) != 0) {
    ::close(fd);
    throw std::runtime_error("the job token file " + path + " can be read by others (mode " +
                             std::to_string((st.st_mode >> 6) & 7) + std::to_string((st.st_mode >> 3) & 7) +
                             std::to_string(st.st_mode & 7) + "): chmod 600 " + path);
  }
  char buf[4096];
  for (ssize_t n; ok && (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      ok = errno == EINTR;
      continue;
    }
    text.append(buf, size_t(n));
    if (text.size() > 4 * kMaxJobTokenBytes) break;  // not a token file; parse_job_token says so
  }
  const int err = errno;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot read the job token file " + path + ": " + std::strerror(err));
  return parse_job_token(text, "the job token file " + path);
}

bool is_loopback_address(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]") return true;
  return host.rfind("127.", 0) == 0 && host.find_first_not_of("0123456789.") == std::string::npos;
}

}  // namespace atl
