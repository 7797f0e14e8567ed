// DistOptions from torchrun's environment, and their validation.
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "atoll/dist.h"
#include "comm/job_token.h"

namespace atl {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && *v != '\0') ? v : nullptr;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = env(name);
  if (v == nullptr) return fallback;
  try {
    size_t used = 0;
    const long long x = std::stoll(v, &used);
    if (used != std::string(v).size()) throw std::invalid_argument("trailing characters");
    return x;
  } catch (const std::exception&) {
    throw std::invalid_argument(std::string("environment variable ") + name + "='" + v + "' is not an integer");
  }
}

std::string timeout_range() {
  return "a number of seconds from " + std::to_string(int64_t(kMinDistTimeout)) + " to " +
         std::to_string(int64_t(kMaxDistTimeout)) + " (a day)";
}

}  // namespace

// Parsed and range-checked here, where the variable or flag is known: a
// non-finite or huge value would reach to_ms(), whose double -> int64 cast
// is undefined out of range (std::stod accepts "inf" and "nan").
double parse_dist_timeout(const std::string& text, const std::string& what) {
  double x = 0;
  try {
    size_t used = 0;
    x = std::stod(text, &used);
    if (used != text.size()) throw std::invalid_argument("trailing characters");
  } catch (const std::exception&) {
    throw std::invalid_argument(what + "='" + text + "' is not a number; it must be " + timeout_range());
  }
  if (!(x >= kMinDistTimeout && x <= kMaxDistTimeout))
    throw std::invalid_argument(what + "='" + text + "' is out of range; it must be " + timeout_range());
  return x;
}

bool dist_requested_by_env() { return env("WORLD_SIZE") != nullptr; }

DistOptions dist_options_from_env(DistOptions o) {
  o.rank = env_int("RANK", o.rank);
  o.world_size = env_int("WORLD_SIZE", o.world_size);
  o.local_world_size = env_int("LOCAL_WORLD_SIZE", o.local_world_size);
  if (const char* a = env("MASTER_ADDR")) o.master_addr = a;
  o.master_port = static_cast<int>(env_int("MASTER_PORT", o.master_port));
  if (const char* i = env("GLOO_SOCKET_IFNAME")) o.ifname = i;
  if (const char* t = env("ATOLL_DIST_TIMEOUT"))
    o.timeout_s = parse_dist_timeout(t, "environment variable ATOLL_DIST_TIMEOUT");
  o.sync_before_ops = env_int("ATOLL_DIST_SYNC_OPS", o.sync_before_ops ? 1 : 0) != 0;
  o.insecure = env_int("ATOLL_INSECURE", o.insecure ? 1 : 0) != 0;
  const char* file = env("ATOLL_JOB_TOKEN_FILE");
  const char* text = env("ATOLL_JOB_TOKEN");
  if (file != nullptr && text != nullptr)
    throw std::invalid_argument("both ATOLL_JOB_TOKEN_FILE and ATOLL_JOB_TOKEN are set: give the job token once");
  if (file != nullptr) {
    o.job_token = read_job_token_file(file);
    o.job_token_source = std::string("ATOLL_JOB_TOKEN_FILE=") + file;
  } else if (text != nullptr) {
    o.job_token = parse_job_token(text, "ATOLL_JOB_TOKEN");
    o.job_token_source = "ATOLL_JOB_TOKEN";
  }
  return o;
}

void validate(const DistOptions& o) {
  auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
  if (o.world_size < 1) fail("WORLD_SIZE (--world-size) must be >= 1, got " + std::to_string(o.world_size));
  if (o.rank < 0 || o.rank >= o.world_size)
    fail("RANK (--rank) must be in 0.." + std::to_string(o.world_size - 1) + " for WORLD_SIZE " +
         std::to_string(o.world_size) + ", got " + std::to_string(o.rank));
  if (o.master_port < 1 || o.master_port > 65535)
    fail("MASTER_PORT (--master-port) must be in 1..65535, got " + std::to_string(o.master_port));
  if (o.master_addr.empty()) fail("MASTER_ADDR (--master-addr) must name rank 0's host");
  if (!(o.timeout_s >= kMinDistTimeout && o.timeout_s <= kMaxDistTimeout))
    fail("ATOLL_DIST_TIMEOUT (--dist-timeout) must be " + timeout_range() + ", got " + std::to_string(o.timeout_s));
  if (!(o.heartbeat_s > 0) || o.heartbeat_s * 3 > o.timeout_s)
    fail("the heartbeat period must be > 0 and at most a third of the timeout");
  if (o.job_token.empty() && !o.insecure && !is_loopback_address(o.master_addr))
    fail("a run across hosts (MASTER_ADDR " + o.master_addr +
         " is not loopback) needs a job token, or anyone who can reach MASTER_PORT can join it: make one with "
         "`atoll token new job.key`, copy it to every host, and start every rank with "
         "ATOLL_JOB_TOKEN_FILE=job.key (--insecure runs without one, unauthenticated; see docs/SECURITY.md)");
  if (o.local_world_size == 0 || o.local_world_size > o.world_size)
    fail("LOCAL_WORLD_SIZE must be in 1..WORLD_SIZE (or unset), got " + std::to_string(o.local_world_size));
}

}  // namespace atl
