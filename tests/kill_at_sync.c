/* LD_PRELOAD shim for the KillAtEveryWrite test (tests/kill_test.cpp): it
 * counts the calls that make a file durable or visible (fsync, fdatasync,
 * rename) and SIGKILLs the process at the N-th, just before it
 * (ATOLL_TEST_KILL_AT=N) or just after it returns (also
 * ATOLL_TEST_KILL_AFTER=1). With N = 0 it only counts, and writes the count
 * to ATOLL_TEST_KILL_COUNT_FILE at exit. No hook in atoll itself: the
 * killed process is the real CLI, at every point where a write commits. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long calls;

static void at_point(int after) {
  const char* at = getenv("ATOLL_TEST_KILL_AT");
  const char* when = getenv("ATOLL_TEST_KILL_AFTER");
  const long n = at ? atol(at) : 0;
  const int kill_after = when && when[0] == '1';
  if (!after) ++calls;
  if (n > 0 && calls == n && after == kill_after) kill(getpid(), SIGKILL);
}

__attribute__((destructor)) static void write_count(void) {
  const char* path = getenv("ATOLL_TEST_KILL_COUNT_FILE");
  if (!path) return;
  FILE* f = fopen(path, "w");
  if (f) {
    fprintf(f, "%ld\n", calls);
    fclose(f);
  }
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  at_point(0);
  const int rc = real(fd);
  at_point(1);
  return rc;
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  at_point(0);
  const int rc = real(fd);
  at_point(1);
  return rc;
}

int rename(const char* from, const char* to) {
  static int (*real)(const char*, const char*);
  if (!real) real = (int (*)(const char*, const char*))dlsym(RTLD_NEXT, "rename");
  at_point(0);
  const int rc = real(from, to);
  at_point(1);
  return rc;
}
