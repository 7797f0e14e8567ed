// Private helpers shared by the model files.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>

#include <memory>

#include "atoll/model.h"

namespace atl {

// A generator private to one model's initialisation, so that workers built
// concurrently never touch the global RNG.
inline at::Generator make_init_generator(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

std::shared_ptr<Model> make_gpt(const ModelConfig& cfg, int64_t vocab_size, uint64_t seed);
std::shared_ptr<Model> make_mlp(const ModelConfig& cfg, uint64_t seed);
std::shared_ptr<Model> make_cnn(const ModelConfig& cfg, uint64_t seed);

}  // namespace atl
