#include "train/checkpoint_file.h"

#include <cstring>
#include <limits>

namespace atl {
namespace {

constexpr char kCheckpointMagic[8] = {'A', 'T', 'O', 'L', 'L', 'C', 'K', 'P'};
constexpr uint32_t kVersion = 1;
constexpr size_t kMaxNameLength = 4096;
constexpr uint8_t kCheckpointMaxDims = 8;

template <typename T>
void put_raw(std::string& out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out.append(buf, sizeof(T));
}

// Reads from a byte range; every read is bounds-checked.
class Reader {
 public:
  Reader(const char* data, size_t size) : data_(data), size_(size) {}
  template <typename T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string bytes(uint64_t n, const char* what) {
    need(n, what);
    std::string s(data_ + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  size_t left() const { return size_ - pos_; }

 private:
  void need(uint64_t n, const char* what) const {
    if (n > size_ - pos_)
      throw CheckpointError(std::string("checkpoint is truncated: ") + what + " runs past the end of the file");
  }
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace

int64_t element_size(uint8_t code) {
  switch (static_cast<ElementType>(code)) {
    case ElementType::Float32:
    case ElementType::Int32:
      return 4;
    case ElementType::Float64:
    case ElementType::Int64:
      return 8;
    case ElementType::UInt8:
    case ElementType::Bool:
      return 1;
    case ElementType::Float16:
    case ElementType::BFloat16:
    case ElementType::Int16:
      return 2;
  }
  return 0;
}

uint64_t fnv1a64(const void* data, size_t size, uint64_t h) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t record_bytes(const std::string& name, const CheckpointRecord& r) {
  uint64_t value = 8;  // an integer, a real, or a text's length
  if (r.kind == RecordKind::Text) value += r.text.size();
  if (r.kind == RecordKind::Tensor) value = 1 + 1 + 8 * uint64_t(r.shape.size()) + 8 + r.text.size();
  return 1 + 2 + name.size() + value;
}

std::string serialize_checkpoint(const CheckpointRecords& records) {
  std::string body;
  put_raw<uint32_t>(body, static_cast<uint32_t>(records.size()));
  for (const auto& [name, r] : records) {
    put_raw<uint8_t>(body, static_cast<uint8_t>(r.kind));
    put_raw<uint16_t>(body, static_cast<uint16_t>(name.size()));
    body += name;
    switch (r.kind) {
      case RecordKind::Integer:
        put_raw<int64_t>(body, r.integer);
        break;
      case RecordKind::Real:
        put_raw<double>(body, r.real);
        break;
      case RecordKind::Text:
        put_raw<uint64_t>(body, r.text.size());
        body += r.text;
        break;
      case RecordKind::Tensor:
        put_raw<uint8_t>(body, static_cast<uint8_t>(r.element));
        put_raw<uint8_t>(body, static_cast<uint8_t>(r.shape.size()));
        for (int64_t d : r.shape) put_raw<int64_t>(body, d);
        put_raw<uint64_t>(body, r.text.size());
        body += r.text;
        break;
    }
  }
  std::string out(kCheckpointMagic, sizeof kCheckpointMagic);
  put_raw<uint32_t>(out, kVersion);
  put_raw<uint64_t>(out, body.size());
  out += body;
  put_raw<uint64_t>(out, fnv1a64(body.data(), body.size()));
  return out;
}

CheckpointRecords parse_checkpoint(const std::string& bytes) {
  Reader file(bytes.data(), bytes.size());
  if (bytes.size() < sizeof kCheckpointMagic ||
      std::memcmp(bytes.data(), kCheckpointMagic, sizeof kCheckpointMagic) != 0)
    throw CheckpointError("not an atoll checkpoint (the file does not start with ATOLLCKP)");
  file.bytes(sizeof kCheckpointMagic, "the magic");
  const auto version = file.get<uint32_t>("the version");
  if (version != kVersion)
    throw CheckpointError("checkpoint format version " + std::to_string(version) + "; this atoll reads version " +
                          std::to_string(kVersion));
  const auto body_size = file.get<uint64_t>("the body size");
  if (body_size > file.left() || file.left() - body_size != sizeof(uint64_t))
    throw CheckpointError("checkpoint is truncated or has trailing bytes: the header promises " +
                          std::to_string(body_size) + " bytes of records and a checksum, the file has " +
                          std::to_string(file.left()) + " bytes after the header");
  const char* body = bytes.data() + (bytes.size() - file.left());
  const uint64_t expected = fnv1a64(body, static_cast<size_t>(body_size));
  uint64_t stored;
  std::memcpy(&stored, body + body_size, sizeof stored);
  if (stored != expected) throw CheckpointError("checkpoint checksum mismatch: the file is corrupted");

  Reader in(body, static_cast<size_t>(body_size));
  const auto count = in.get<uint32_t>("the record count");
  CheckpointRecords records;
  for (uint32_t i = 0; i < count; ++i) {
    CheckpointRecord r;
    const auto kind = in.get<uint8_t>("a record kind");
    const auto name_length = in.get<uint16_t>("a record name length");
    if (name_length == 0 || name_length > kMaxNameLength)
      throw CheckpointError("checkpoint record with a bad name length");
    std::string name = in.bytes(name_length, "a record name");
    switch (static_cast<RecordKind>(kind)) {
      case RecordKind::Integer:
        r.integer = in.get<int64_t>("an integer");
        break;
      case RecordKind::Real:
        r.real = in.get<double>("a real");
        break;
      case RecordKind::Text:
        r.text = in.bytes(in.get<uint64_t>("a text length"), "a text");
        break;
      case RecordKind::Tensor: {
        const auto code = in.get<uint8_t>("a tensor type");
        const int64_t size = element_size(code);
        if (size == 0)
          throw CheckpointError("checkpoint tensor '" + name + "' has unknown element type " + std::to_string(code));
        r.element = static_cast<ElementType>(code);
        const auto ndim = in.get<uint8_t>("a tensor rank");
        if (ndim > kCheckpointMaxDims)
          throw CheckpointError("checkpoint tensor '" + name + "' has " + std::to_string(ndim) + " dimensions");
        uint64_t elements = 1;
        for (uint8_t d = 0; d < ndim; ++d) {
          const auto dim = in.get<int64_t>("a tensor shape");
          if (dim < 0 || (dim > 0 && elements > std::numeric_limits<uint64_t>::max() / uint64_t(dim) / uint64_t(size)))
            throw CheckpointError("checkpoint tensor '" + name + "' has a bad shape");
          elements *= uint64_t(dim);
          r.shape.push_back(dim);
        }
        const auto n = in.get<uint64_t>("a tensor size");
        if (n != elements * uint64_t(size))
          throw CheckpointError("checkpoint tensor '" + name + "' holds " + std::to_string(n) +
                                " bytes, its shape needs " + std::to_string(elements * uint64_t(size)));
        r.text = in.bytes(n, "tensor data");
        break;
      }
      default:
        throw CheckpointError("checkpoint record '" + name + "' has unknown kind " + std::to_string(kind));
    }
    r.kind = static_cast<RecordKind>(kind);
    if (!records.emplace(std::move(name), std::move(r)).second)
      throw CheckpointError("checkpoint has two records with the same name");
  }
  if (in.left() != 0) throw CheckpointError("checkpoint has bytes after its last record");
  return records;
}

}  // namespace atl
