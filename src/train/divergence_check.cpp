#include "train/divergence_check.h"

#include <ATen/ATen.h>

#include <cstring>
#include <string_view>

#include "util/crypto.h"

namespace atl {

DivergenceCheck::DivergenceCheck(const Config& cfg, std::vector<std::string> names, int64_t rank, bool real,
                                 bool shared_global)
    : enabled_(shared_global && (cfg.run.divergence_check == "on" || (cfg.run.divergence_check == "auto" && real))),
      names_(std::move(names)),
      rank_(rank) {
  for (const Perturbation& p : parse_perturbations(cfg.faults.perturb_global))
    if (p.worker == rank) perturbations_.push_back(p);
  for (const Perturbation& p : perturbations_)
    if (!p.tensor.empty()) tensor_index(p.tensor);  // an unknown name is refused before the run starts
}

size_t DivergenceCheck::tensor_index(const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return i;
  std::string known;
  for (const auto& n : names_) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("faults.perturb_global names tensor '" + name + "', which the model does not have (" +
                              known + ")");
}

void DivergenceCheck::after_update(Communicator& comm, const std::vector<at::Tensor>* global, bool synced, int64_t t) {
  if (global == nullptr || global->empty()) return;
  at::NoGradGuard no_grad;
  for (const Perturbation& p : perturbations_) {
    if (p.step != t + 1) continue;  // steps counted from 1, as the run reports them
    at::Tensor target = (*global)[p.tensor.empty() ? 0 : tensor_index(p.tensor)];
    target.view({-1})[0].add_(1e-3);  // theta_g's tensors are views of its flat buffer: this changes theta_g
  }
  if (!enabled_ || !synced) return;
  const size_t n = global->size();
  at::Tensor mine = at::empty({int64_t(n * kSha256Bytes)}, at::kByte);
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor c = (*global)[i].contiguous();
    const Bytes digest =
        sha256({std::string_view(static_cast<const char*>(c.data_ptr()), size_t(c.numel()) * c.element_size())});
    std::memcpy(mine.data_ptr<uint8_t>() + i * kSha256Bytes, digest.data(), kSha256Bytes);
  }
  std::vector<at::Tensor> all;
  comm.all_gather(mine, all, "divergence-check");
  const uint8_t* first = all.at(0).data_ptr<uint8_t>();
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r].numel() != mine.numel())
      throw DivergenceError("divergence check after the sync of step " + std::to_string(t + 1) + ": rank " +
                            std::to_string(r) + " sent " + std::to_string(all[r].numel()) + " digest bytes, expected " +
                            std::to_string(mine.numel()) + "; the ranks do not hold the same model");
    const uint8_t* other = all[r].data_ptr<uint8_t>();
    for (size_t i = 0; i < n; ++i) {
      if (std::memcmp(first + i * kSha256Bytes, other + i * kSha256Bytes, kSha256Bytes) == 0) continue;
      size_t more = 0;
      for (size_t j = i + 1; j < n; ++j)
        more += std::memcmp(first + j * kSha256Bytes, other + j * kSha256Bytes, kSha256Bytes) != 0;
      const std::string name = i < names_.size() ? names_[i] : "tensor " + std::to_string(i);
      throw DivergenceError("divergence check after the sync of step " + std::to_string(t + 1) + ": rank " +
                            std::to_string(r) + "'s global model differs from rank 0's in " + name +
                            (more > 0 ? " (and " + std::to_string(more) + " more tensors)" : "") +
                            "; the ranks no longer train one model, so the run stops (run.divergence_check)");
    }
  }
}

}  // namespace atl
