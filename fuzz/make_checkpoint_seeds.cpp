// Writes small valid checkpoints with the real serializer into a folder
// (the seed corpus fuzz/corpus/fuzz_checkpoint): one per record kind, every
// element type, empty and zero-size tensors, and a mixed one.
//   cmake --build build-fuzz --target make_checkpoint_seeds  (not built by default)
//   build-fuzz/make_checkpoint_seeds fuzz/corpus/fuzz_checkpoint
#include <cstdio>
#include <fstream>
#include <string>

#include "train/checkpoint_file.h"

namespace {

void write(const std::string& dir, const std::string& name, const atl::CheckpointRecords& r) {
  std::ofstream(dir + "/" + name, std::ios::binary) << atl::serialize_checkpoint(r);
}

atl::CheckpointRecord integer(int64_t v) {
  atl::CheckpointRecord r;
  r.kind = atl::RecordKind::Integer;
  r.integer = v;
  return r;
}
atl::CheckpointRecord real(double v) {
  atl::CheckpointRecord r;
  r.kind = atl::RecordKind::Real;
  r.real = v;
  return r;
}
atl::CheckpointRecord text(const std::string& v) {
  atl::CheckpointRecord r;
  r.kind = atl::RecordKind::Text;
  r.text = v;
  return r;
}
atl::CheckpointRecord tensor(atl::ElementType t, std::vector<int64_t> shape) {
  atl::CheckpointRecord r;
  r.kind = atl::RecordKind::Tensor;
  r.element = t;
  r.shape = shape;
  int64_t n = atl::element_size(static_cast<uint8_t>(t));
  for (int64_t d : shape) n *= d;
  for (int64_t i = 0; i < n; ++i) r.text.push_back(static_cast<char>(i * 37 + 11));
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  write(dir, "empty", {});
  write(dir, "integer", {{"step", integer(1234)}});
  write(dir, "real", {{"lr", real(3e-4)}});
  write(dir, "text", {{"config", text("[train]\nsteps = 10\n")}});
  atl::CheckpointRecords types;
  const char* names[] = {"f32", "f64", "i64", "i32", "u8", "f16", "bf16", "i16", "bool"};
  for (int c = 0; c <= 8; ++c) types[names[c]] = tensor(static_cast<atl::ElementType>(c), {2, 3});
  write(dir, "tensor_types", types);
  write(dir, "tensor_shapes",
        {{"scalar", tensor(atl::ElementType::Float32, {})},
         {"zero", tensor(atl::ElementType::Float32, {0, 4})},
         {"rank8", tensor(atl::ElementType::UInt8, {1, 2, 1, 2, 1, 2, 1, 2})}});
  write(dir, "mixed",
        {{"step", integer(7)},
         {"run.seed", integer(1337)},
         {"loss", real(2.5)},
         {"strategy", text("diloco")},
         {"worker0/model/wte.weight", tensor(atl::ElementType::Float32, {4, 2})},
         {"worker0/optim/step", tensor(atl::ElementType::Int64, {1})}});
  return 0;
}
