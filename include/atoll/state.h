// StateVisitor: one walk over an object's state that both saves and
// restores it, so a class lists its state once and the two directions can
// never disagree. Checkpoints use it for models, optimizers, strategies,
// data cursors, ledgers and clocks.
//
//   void Foo::visit_state(StateVisitor& v) {
//     v.tensor("momentum", momentum_);   // (P)
//     v.integer("outer_steps", outer_steps_);
//   }
//
// Saving reads each value; loading overwrites it. A tensor that is already
// defined is loaded in place (copy_), so views of it and tensors sharing its
// storage stay valid; its dtype and shape must then match the saved one. An
// undefined tensor takes the saved tensor as it is.
// Thread-safety: a visitor belongs to one thread.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace atl {

// Saved state that cannot be used (a checkpoint truncated, corrupted, not a
// checkpoint, or from a different run). what() says which and what to do.
class CheckpointError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The fewest bytes one saved entry (tensor, integer, real or text) takes in
// a checkpoint: count()'s unit when each listed item saves entries of its own.
constexpr uint64_t kMinStateEntryBytes = 12;

class StateVisitor {
 public:
  virtual ~StateVisitor() = default;
  virtual bool loading() const = 0;
  virtual void tensor(const std::string& name, at::Tensor& t) = 0;
  virtual void integer(const std::string& name, int64_t& v) = 0;
  virtual void real(const std::string& name, double& v) = 0;
  virtual void text(const std::string& name, std::string& v) = 0;

  // A list of tensors: its length, then each as name.<i>. Loading into a
  // list of the same length loads each in place.
  void tensors(const std::string& name, std::vector<at::Tensor>& list);
  void integers(const std::string& name, std::vector<int64_t>& values);
  void flag(const std::string& name, bool& value);
  // A tensor that may be undefined (a residual before the first round).
  void optional_tensor(const std::string& name, at::Tensor& t);
  // The length of a list whose entries follow; each entry takes at least
  // `min_bytes_each` bytes of the saved state. Loading refuses a count
  // that the state not yet read cannot hold, before anything is sized by it.
  void count(const std::string& name, size_t& n, uint64_t min_bytes_each);

  // Names visited while a Scope lives are prefixed with `prefix` + ".".
  class Scope {
   public:
    Scope(StateVisitor& v, const std::string& prefix) : v_(v), saved_(v.prefix_) { v.prefix_ += prefix + "."; }
    ~Scope() { v_.prefix_ = saved_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StateVisitor& v_;
    std::string saved_;
  };

 protected:
  std::string full_name(const std::string& name) const { return prefix_ + name; }
  // Loading: bytes of saved state not read yet, the most any count may
  // promise (the default, for visitors that read no file: no bound).
  virtual uint64_t unread_bytes() const { return UINT64_MAX; }
  // What is being read, for messages (a checkpoint file's path).
  virtual std::string source() const { return "saved state"; }

 private:
  std::string prefix_;
};

}  // namespace atl
