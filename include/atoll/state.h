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
#include <string>
#include <vector>

namespace atl {

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
  void count(const std::string& name, size_t& n);

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

 private:
  std::string prefix_;
};

}  // namespace atl
