// A reusable barrier for the simulate driver's observers (logging, eval):
// the last thread to arrive runs a completion function while the others
// wait. Not communication of the method: it never touches the ledger or the
// simulated clocks. abort() releases every waiter with an exception.
// Thread-safety: all methods are safe to call from any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>

namespace atl {

class Rendezvous {
 public:
  explicit Rendezvous(int64_t n) : n_(n) {}

  // Blocks until all n threads arrived; the last runs `on_last` first. If
  // on_last throws, the exception propagates to that thread only (callers
  // abort the group).
  void arrive(const std::function<void()>& on_last) {
    std::unique_lock<std::mutex> lock(mutex_);
    check();
    const int64_t generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      on_last();
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != generation || aborted_; });
    check();
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  void check() const {
    if (aborted_) throw std::runtime_error("simulation stopped: another worker failed");
  }
  int64_t n_;
  int64_t arrived_ = 0;
  int64_t generation_ = 0;
  bool aborted_ = false;
  std::mutex mutex_;
  std::condition_variable cv_;
};

// At most `n` workers compute (forward/backward) at once: with more worker
// threads than cores, time-slicing them evicts each other's caches. Held only
// around compute, never across communication, so it cannot deadlock a
// collective. Thread-safety: all methods are safe from any thread.
class ComputeSlots {
 public:
  explicit ComputeSlots(int64_t n) : free_(n) {}
  // Holds one slot for its lifetime.
  class Hold {
   public:
    explicit Hold(ComputeSlots& s) : slots_(s) { slots_.acquire(); }
    ~Hold() { slots_.release(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    ComputeSlots& slots_;
  };
  void acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++free_;
    cv_.notify_one();
  }

 private:
  int64_t free_;
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace atl
