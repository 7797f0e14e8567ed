// InProcessGroup: n communicators for n threads of one process.
//
// Collectives rendezvous per "generation" under one mutex: each rank deposits
// its input and arrival time; the last to arrive checks that all ranks called
// the same op with matching tensors, computes the result (reducing in rank
// order 0..n-1, so the bytes never depend on which thread came last), sets
// completion = latest arrival + network time, bumps the generation and wakes
// everyone. Inputs of parked ranks are read only by the last rank while it
// holds the mutex, and a parked rank cannot return before the generation
// changes (or the group aborts, which also needs the mutex), so no tensor is
// read after its owner has moved on.
//
// The all-reduce of contiguous float32 tensors (every strategy's hot path)
// writes straight into the ranks' own tensors, with no result buffer: small
// ones by the last rank under the mutex; large ones in parallel, each rank
// reducing one slice of the elements across all ranks and writing that slice
// of every rank's tensor, then waiting until all slices are done (a second
// rendezvous) so no rank returns while its tensor is still being written.
// Per element the arithmetic is the same as the general path's, so the
// result is bitwise the same.
//
// Point-to-point ops never involve other ranks: each ordered pair (src, dst)
// has a FIFO mailbox of copied tensors stamped with the sender's arrival.
//
// Every op moves its data when it is called, also all_reduce_async: all ranks
// reach the op at the same training step, so the values equal what a real
// overlapped op would deliver at wait(); only simulated time differs, and the
// Work charges that. Details: Mean on integer tensors truncates toward zero;
// all_gather returns flattened (1-D) copies.
#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <sstream>
#include <utility>

#include "atoll/comm.h"

namespace atl {
namespace {

enum class Kind { AllReduce, AllGather, Broadcast, Barrier };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::AllReduce:
      return "all_reduce";
    case Kind::AllGather:
      return "all_gather";
    case Kind::Broadcast:
      return "broadcast";
    case Kind::Barrier:
      return "barrier";
  }
  return "?";
}

// What one rank brought to a collective. Pointers stay valid while it is parked.
struct Slot {
  Kind kind = Kind::Barrier;
  ReduceOp reduce = ReduceOp::Sum;
  int64_t root = 0;
  const at::Tensor* tensor = nullptr;
  double arrival = 0;
  double network_seconds = 0;
  const std::function<double(const std::vector<int64_t>&)>* seconds_for_sizes = nullptr;
};

// The all-reduce of contiguous float32 tensors: data[r] is rank r's tensor,
// reduced in place. When shared out, rank r reduces slice r of data.size().
struct ReduceJob {
  std::vector<float*> data;
  int64_t numel = 0;
  bool mean = false;
  int64_t slices_done = 0;  // guarded by the group's mutex
};

// Elements [begin, end) of every rank's tensor become their rank-order sum
// (divided by the rank count for a mean). Works through small chunks that
// stay in L1, so each tensor is read once and written once. The operations
// match at::add_ then at::div_ in the general path element for element.
void reduce_range(const ReduceJob& job, int64_t begin, int64_t end) {
  constexpr int64_t kChunk = 2048;
  float acc[kChunk];
  const size_t ranks = job.data.size();
  const float divisor = static_cast<float>(ranks);
  for (int64_t lo = begin; lo < end; lo += kChunk) {
    const int64_t len = std::min(kChunk, end - lo);
    std::memcpy(acc, job.data[0] + lo, sizeof(float) * size_t(len));
    for (size_t r = 1; r < ranks; ++r) {
      const float* x = job.data[r] + lo;
      for (int64_t i = 0; i < len; ++i) acc[i] += x[i];
    }
    if (job.mean)
      for (int64_t i = 0; i < len; ++i) acc[i] /= divisor;
    for (size_t r = 0; r < ranks; ++r) std::memcpy(job.data[r] + lo, acc, sizeof(float) * size_t(len));
  }
}

// Below this many elements per rank one thread reduces everything: waking
// the others to share the work would cost more than it saves.
constexpr int64_t kParallelReduceMin = int64_t(1) << 16;

// Outcome of one generation, shared by all its ranks.
struct Result {
  std::string error;  // non-empty: every rank throws
  bool invalid_argument = false;
  double completion = 0;
  at::Tensor value;                  // all_reduce (general path) / broadcast, flat
  std::shared_ptr<ReduceJob> job;    // all_reduce written in place; slices left for the ranks
  std::vector<at::Tensor> gathered;  // all_gather, flat, rank order
};

struct Message {
  bool from_exchange = false;
  at::Tensor data;
  double arrival = 0;
};

const char* p2p_name(bool exchange) { return exchange ? "exchange" : "send"; }

std::string describe(const at::Tensor& t) {
  std::ostringstream s;
  s << t.numel() << " elements of " << t.scalar_type();
  return s.str();
}

// Shared state of a group. Thread-safe: every member is guarded by `mu`.
class GroupState {
 public:
  explicit GroupState(int64_t n) : n_(n), slots_(static_cast<size_t>(n)) {}

  int64_t size() const { return n_; }

  void abort(const std::string& why) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!aborted_) {
        aborted_ = true;
        why_ = why;
      }
    }
    cv_.notify_all();
  }

  // Aborts, then waits until no thread is inside this state any more, so the
  // group can be destroyed under ranks that were blocked in an op.
  void abort_and_drain(const std::string& why) {
    abort(why);
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return active_ == 0; });
  }

  bool aborted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return aborted_;
  }

  // Rendezvous of all ranks; returns the generation's result or throws.
  std::shared_ptr<const Result> collective(int64_t rank, const Slot& slot) {
    std::unique_lock<std::mutex> lock(mu_);
    const Inside inside(*this);
    throw_if_aborted();
    slots_[static_cast<size_t>(rank)] = slot;
    const uint64_t gen = generation_;
    if (++arrived_ == n_) {
      auto res = std::make_shared<Result>();
      try {
        combine(*res);
      } catch (const std::invalid_argument& e) {
        res->error = e.what();
        res->invalid_argument = true;
      } catch (const std::exception& e) {
        res->error = std::string("collective failed: ") + e.what();
      }
      for (Slot& s : slots_) s = Slot{};
      arrived_ = 0;
      result_ = res;
      ++generation_;
      cv_.notify_all();
      return checked(res);
    }
    cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
    if (generation_ == gen) throw_if_aborted();
    // result_ cannot be replaced yet: the next generation needs this rank too.
    return checked(result_);
  }

  void post(int64_t src, int64_t dst, Message m) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      const Inside inside(*this);
      throw_if_aborted();
      mailboxes_[{src, dst}].push_back(std::move(m));
    }
    cv_.notify_all();
  }

  Message take(int64_t src, int64_t dst) {
    std::unique_lock<std::mutex> lock(mu_);
    const Inside inside(*this);
    std::deque<Message>& box = mailboxes_[{src, dst}];
    cv_.wait(lock, [&] { return aborted_ || !box.empty(); });
    throw_if_aborted();
    Message m = std::move(box.front());
    box.pop_front();
    return m;
  }

  // Each rank reduces its slice of an in-place all-reduce, then waits until
  // every slice is done: only then is its tensor final and no longer written
  // by another thread. Cannot fail, so every rank always gets here.
  void finish_job(int64_t rank, ReduceJob& job) {
    std::unique_lock<std::mutex> lock(mu_);
    const Inside inside(*this);
    lock.unlock();
    const int64_t slices = static_cast<int64_t>(job.data.size());
    const int64_t per = (job.numel + slices - 1) / slices;
    const int64_t begin = std::min(job.numel, rank * per);
    reduce_range(job, begin, std::min(job.numel, begin + per));
    lock.lock();
    if (++job.slices_done == slices) {
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return job.slices_done == slices; });
    }
  }

 private:
  // Counts threads inside an op; constructed and destroyed with mu_ held.
  struct Inside {
    explicit Inside(GroupState& s) : state(s) { ++state.active_; }
    ~Inside() {
      if (--state.active_ == 0 && state.aborted_) state.cv_.notify_all();
    }
    Inside(const Inside&) = delete;
    Inside& operator=(const Inside&) = delete;
    GroupState& state;
  };

  void throw_if_aborted() const {
    if (aborted_) throw CommAborted("communication aborted: " + why_);
  }

  static std::shared_ptr<const Result> checked(std::shared_ptr<const Result> res) {
    if (!res->error.empty()) {
      if (res->invalid_argument) throw std::invalid_argument(res->error);
      throw std::runtime_error(res->error);
    }
    return res;
  }

  // Runs with mu_ held, by the last rank to arrive.
  void combine(Result& res) {
    const Slot& s0 = slots_[0];
    double latest = s0.arrival;
    double network = s0.network_seconds;
    for (int64_t r = 1; r < n_; ++r) {
      const Slot& s = slots_[static_cast<size_t>(r)];
      if (s.kind != s0.kind) {
        std::ostringstream msg;
        msg << "collective mismatch: rank 0 called " << kind_name(s0.kind) << " but rank " << r << " called "
            << kind_name(s.kind) << "; every rank must make the same calls in the same order";
        throw std::invalid_argument(msg.str());
      }
      latest = std::max(latest, s.arrival);
      network = std::max(network, s.network_seconds);
    }
    const char* name = kind_name(s0.kind);
    if (s0.kind == Kind::AllReduce || s0.kind == Kind::Broadcast) {
      for (int64_t r = 1; r < n_; ++r) {
        const Slot& s = slots_[static_cast<size_t>(r)];
        const at::Tensor& a = *s0.tensor;
        const at::Tensor& b = *s.tensor;
        if (a.numel() != b.numel() || a.scalar_type() != b.scalar_type()) {
          throw std::invalid_argument(std::string(name) + " mismatch: rank 0 passed " + describe(a) + " but rank " +
                                      std::to_string(r) + " passed " + describe(b));
        }
        if (s0.kind == Kind::AllReduce && s.reduce != s0.reduce) {
          throw std::invalid_argument("all_reduce mismatch: rank 0 and rank " + std::to_string(r) +
                                      " asked for different reduce ops");
        }
        if (s0.kind == Kind::Broadcast && s.root != s0.root) {
          throw std::invalid_argument("broadcast mismatch: rank 0 named root " + std::to_string(s0.root) +
                                      " but rank " + std::to_string(r) + " named root " + std::to_string(s.root));
        }
      }
    }
    switch (s0.kind) {
      case Kind::AllReduce: {
        if (in_place_reducible()) {
          auto job = std::make_shared<ReduceJob>();
          for (const Slot& s : slots_) job->data.push_back(s.tensor->data_ptr<float>());
          job->numel = s0.tensor->numel();
          job->mean = s0.reduce == ReduceOp::Mean;
          if (job->numel >= kParallelReduceMin && n_ > 1) {
            res.job = job;  // every rank reduces its slice in finish_job
          } else {
            reduce_range(*job, 0, job->numel);
          }
          break;
        }
        // Fixed rank order: bitwise identical whichever thread combines.
        at::Tensor acc = s0.tensor->reshape({-1}).clone();
        for (int64_t r = 1; r < n_; ++r) acc.add_(slots_[static_cast<size_t>(r)].tensor->reshape({-1}));
        if (s0.reduce == ReduceOp::Mean) {
          if (at::isFloatingType(acc.scalar_type()) || at::isComplexType(acc.scalar_type())) {
            acc.div_(static_cast<double>(n_));
          } else if (acc.scalar_type() == at::kBool) {
            throw std::invalid_argument("all_reduce: Mean is undefined for bool tensors");
          } else {
            acc = at::div(acc, n_, "trunc");  // integers: truncating division
          }
        }
        res.value = acc;
        break;
      }
      case Kind::Broadcast:
        res.value = slots_[static_cast<size_t>(s0.root)].tensor->reshape({-1}).clone();
        break;
      case Kind::AllGather: {
        for (int64_t r = 1; r < n_; ++r) {
          const at::Tensor& b = *slots_[static_cast<size_t>(r)].tensor;
          if (b.scalar_type() != s0.tensor->scalar_type()) {
            throw std::invalid_argument("all_gather mismatch: rank 0 passed " + describe(*s0.tensor) + " but rank " +
                                        std::to_string(r) + " passed " + describe(b) + "; dtypes must match");
          }
        }
        std::vector<int64_t> sizes;
        for (int64_t r = 0; r < n_; ++r) {
          const at::Tensor& t = *slots_[static_cast<size_t>(r)].tensor;
          res.gathered.push_back(t.reshape({-1}).clone());
          sizes.push_back(t.numel() * static_cast<int64_t>(t.element_size()));
        }
        // Rank 0's model decides, so the time does not depend on who came last.
        network = (*s0.seconds_for_sizes)(sizes);
        break;
      }
      case Kind::Barrier:
        break;
    }
    res.completion = latest + network;
  }

  // All ranks passed contiguous float32 tensors (sizes already checked equal)
  // in memory no other rank's tensor overlaps.
  bool in_place_reducible() const {
    for (size_t r = 0; r < slots_.size(); ++r) {
      const at::Tensor& t = *slots_[r].tensor;
      if (t.scalar_type() != at::kFloat || !t.is_contiguous()) return false;
      const float* lo = t.data_ptr<float>();
      for (size_t q = 0; q < r; ++q) {
        const float* other = slots_[q].tensor->data_ptr<float>();
        if (lo < other + t.numel() && other < lo + t.numel()) return false;
      }
    }
    return true;
  }

  const int64_t n_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;
  std::string why_;
  uint64_t generation_ = 0;
  int64_t arrived_ = 0;
  int64_t active_ = 0;  // threads inside collective/post/take
  std::vector<Slot> slots_;
  std::shared_ptr<const Result> result_;
  std::map<std::pair<int64_t, int64_t>, std::deque<Message>> mailboxes_;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(int64_t rank, int64_t size, CollectiveAlgo algo, std::shared_ptr<GroupState> state)
      : Communicator(rank, size, algo), state_(std::move(state)) {}

 protected:
  double do_all_reduce(at::Tensor& t, ReduceOp op, double arrival, double network_seconds) override {
    Slot s;
    s.kind = Kind::AllReduce;
    s.reduce = op;
    s.tensor = &t;
    s.arrival = arrival;
    s.network_seconds = network_seconds;
    auto res = state_->collective(rank(), s);
    if (res->job) {
      state_->finish_job(rank(), *res->job);
    } else if (res->value.defined()) {
      t.copy_(res->value.view(t.sizes()));
    }  // else: already reduced in place by the last rank to arrive
    return res->completion;
  }

  double do_all_gather(const at::Tensor& in, std::vector<at::Tensor>& out, double arrival,
                       const std::function<double(const std::vector<int64_t>&)>& network_seconds_for_sizes) override {
    Slot s;
    s.kind = Kind::AllGather;
    s.tensor = &in;
    s.arrival = arrival;
    s.seconds_for_sizes = &network_seconds_for_sizes;
    auto res = state_->collective(rank(), s);
    // Own copies: ranks may modify their outputs in place.
    std::vector<at::Tensor> copies;
    copies.reserve(res->gathered.size());
    for (const at::Tensor& g : res->gathered) copies.push_back(g.clone());
    out = std::move(copies);
    return res->completion;
  }

  double do_broadcast(at::Tensor& t, int64_t root, double arrival, double network_seconds) override {
    Slot s;
    s.kind = Kind::Broadcast;
    s.root = root;
    s.tensor = &t;
    s.arrival = arrival;
    s.network_seconds = network_seconds;
    auto res = state_->collective(rank(), s);
    if (rank() != root) t.copy_(res->value.view(t.sizes()));
    return res->completion;
  }

  double do_barrier(double arrival, double network_seconds) override {
    Slot s;
    s.kind = Kind::Barrier;
    s.arrival = arrival;
    s.network_seconds = network_seconds;
    return state_->collective(rank(), s)->completion;
  }

  double do_exchange(const at::Tensor& send, std::vector<at::Tensor>& recvs, const std::vector<int64_t>& peers,
                     double arrival, double network_seconds) override {
    // Post to everyone first (mailboxes are buffered), then take: whatever
    // order the peers call in, nobody waits on a post that comes later.
    for (int64_t peer : peers) state_->post(rank(), peer, Message{true, send.clone(), arrival});
    double latest = arrival;
    for (size_t i = 0; i < peers.size(); ++i) {
      Message m = state_->take(peers[i], rank());
      check_message(m, /*want_exchange=*/true, recvs[i], peers[i]);
      recvs[i].copy_(m.data);
      latest = std::max(latest, m.arrival);
    }
    return latest + network_seconds;
  }

  double do_send(const at::Tensor& t, int64_t dst, double arrival, double network_seconds) override {
    // Buffered: the sender never waits for the receiver.
    state_->post(rank(), dst, Message{false, t.clone(), arrival});
    return arrival + network_seconds;
  }

  double do_recv(at::Tensor& t, int64_t src, double arrival, double network_seconds) override {
    Message m = state_->take(src, rank());
    check_message(m, /*want_exchange=*/false, t, src);
    t.copy_(m.data);
    return std::max(arrival, m.arrival) + network_seconds;
  }

 private:
  void check_message(const Message& m, bool want_exchange, const at::Tensor& into, int64_t peer) const {
    std::ostringstream msg;
    if (m.from_exchange != want_exchange) {
      msg << "point-to-point mismatch: rank " << rank() << " called " << (want_exchange ? "exchange" : "recv")
          << " with rank " << peer << " but rank " << peer << " called " << p2p_name(m.from_exchange);
      throw std::invalid_argument(msg.str());
    }
    if (m.data.sizes() != into.sizes() || m.data.scalar_type() != into.scalar_type()) {
      msg << (want_exchange ? "exchange" : "recv") << " mismatch: rank " << peer << " sent " << m.data.sizes() << " "
          << m.data.scalar_type() << " but rank " << rank() << " expects " << into.sizes() << " " << into.scalar_type();
      throw std::invalid_argument(msg.str());
    }
  }

  std::shared_ptr<GroupState> state_;
};

}  // namespace

struct InProcessGroup::Shared : GroupState {
  using GroupState::GroupState;
};

InProcessGroup::InProcessGroup(int64_t n, CollectiveAlgo algo) {
  if (n < 1) {
    throw std::invalid_argument("InProcessGroup: need at least 1 rank, got " + std::to_string(n));
  }
  shared_ = std::make_shared<Shared>(n);
  comms_.reserve(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    comms_.push_back(std::make_unique<InProcessCommunicator>(r, n, algo, shared_));
  }
}

// Ranks blocked in an op are woken with CommAborted and have left the shared
// state before the communicators go away. Threads must not start new ops (or
// be doing anything else with their communicator) once destruction begins.
InProcessGroup::~InProcessGroup() { shared_->abort_and_drain("the InProcessGroup was destroyed"); }

int64_t InProcessGroup::size() const { return shared_->size(); }

Communicator& InProcessGroup::rank(int64_t r) {
  if (r < 0 || r >= size()) {
    throw std::invalid_argument("InProcessGroup::rank: rank " + std::to_string(r) + " is out of range (valid: 0.." +
                                std::to_string(size() - 1) + ")");
  }
  return *comms_[static_cast<size_t>(r)];
}

void InProcessGroup::abort(const std::string& why) { shared_->abort(why); }

bool InProcessGroup::aborted() const { return shared_->aborted(); }

}  // namespace atl
