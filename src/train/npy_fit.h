// Whether an npy data folder fits the configured model, checked once at
// load time so that a wrong file fails with its name and the expected shape
// rather than deep inside a forward pass.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "atoll/config.h"
#include "atoll/data.h"

namespace atl {

// model.kind = gpt: integer token ids in [0, data.vocab_size), inputs
// (N, T) with T = model.block_size and targets of the same shape.
// mlp / cnn: float32 images of 784 values ((N, 1, 28, 28) for cnn) and one
// integer label in 0..9 per example (targets of shape (N)).
// torchscript: anything (the module decides). Throws NpyError naming the file.
void check_npy_fits_model(const NpyData& data, const Config& cfg, const std::string& dir);

// DataSource::vocab_size() for npy data: data.vocab_size for gpt (and for
// torchscript, 0 when not set), the 10 classes of the built-in image models.
int64_t npy_vocab_size(const Config& cfg);

}  // namespace atl
