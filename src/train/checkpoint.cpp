#include "train/checkpoint.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "atoll/config.h"
#include "util/file_io.h"
#include "util/format.h"

namespace atl {

// The smallest record of checkpoint_file.h: kind, name length, a one-byte name, an 8-byte value.
static_assert(kMinStateEntryBytes == 1 + 2 + 1 + 8, "kMinStateEntryBytes is the smallest checkpoint record");

// ---- writer ---------------------------------------------------------------------

namespace {

ElementType element_of(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return ElementType::Float32;
    case at::kDouble:
      return ElementType::Float64;
    case at::kLong:
      return ElementType::Int64;
    case at::kInt:
      return ElementType::Int32;
    case at::kByte:
      return ElementType::UInt8;
    case at::kHalf:
      return ElementType::Float16;
    case at::kBFloat16:
      return ElementType::BFloat16;
    case at::kShort:
      return ElementType::Int16;
    case at::kBool:
      return ElementType::Bool;
    default:
      throw std::invalid_argument(std::string("checkpoints cannot hold tensors of type ") + at::toString(t));
  }
}

at::ScalarType scalar_of(ElementType e) {
  switch (e) {
    case ElementType::Float32:
      return at::kFloat;
    case ElementType::Float64:
      return at::kDouble;
    case ElementType::Int64:
      return at::kLong;
    case ElementType::Int32:
      return at::kInt;
    case ElementType::UInt8:
      return at::kByte;
    case ElementType::Float16:
      return at::kHalf;
    case ElementType::BFloat16:
      return at::kBFloat16;
    case ElementType::Int16:
      return at::kShort;
    case ElementType::Bool:
      return at::kBool;
  }
  throw CheckpointError("checkpoint tensor of unknown element type");
}

}  // namespace

void StateWriter::add(const std::string& name, CheckpointRecord r) {
  if (!records_.emplace(full_name(name), std::move(r)).second)
    throw std::logic_error("state entry '" + full_name(name) + "' visited twice");
}

void StateWriter::tensor(const std::string& name, at::Tensor& t) {
  if (!t.defined()) throw std::logic_error("state entry '" + full_name(name) + "' is an undefined tensor");
  CheckpointRecord r;
  r.kind = RecordKind::Tensor;
  r.element = element_of(t.scalar_type());
  const at::Tensor c = t.detach().cpu().contiguous();
  r.shape.assign(c.sizes().begin(), c.sizes().end());
  r.text.assign(static_cast<const char*>(c.data_ptr()), size_t(c.numel()) * c.element_size());
  add(name, std::move(r));
}

void StateWriter::integer(const std::string& name, int64_t& v) {
  CheckpointRecord r;
  r.kind = RecordKind::Integer;
  r.integer = v;
  add(name, std::move(r));
}

void StateWriter::real(const std::string& name, double& v) {
  CheckpointRecord r;
  r.kind = RecordKind::Real;
  r.real = v;
  add(name, std::move(r));
}

void StateWriter::text(const std::string& name, std::string& v) {
  CheckpointRecord r;
  r.kind = RecordKind::Text;
  r.text = v;
  add(name, std::move(r));
}

// ---- reader ---------------------------------------------------------------------

StateReader::StateReader(const CheckpointRecords& records, std::string source)
    : records_(records), source_(std::move(source)) {
  for (const auto& [name, r] : records_) unread_bytes_ += record_bytes(name, r);
}

const CheckpointRecord& StateReader::find(const std::string& name, RecordKind kind) {
  const std::string key = full_name(name);
  auto it = records_.find(key);
  if (it == records_.end())
    throw CheckpointError(source_ + " lacks '" + key +
                          "': it was written by a different model, strategy or settings than this run's");
  if (it->second.kind != kind) throw CheckpointError(source_ + ": '" + key + "' has the wrong kind of value");
  if (read_.insert(key).second) unread_bytes_ -= record_bytes(key, it->second);
  return it->second;
}

void StateReader::tensor(const std::string& name, at::Tensor& t) {
  const CheckpointRecord& r = find(name, RecordKind::Tensor);
  const at::ScalarType type = scalar_of(r.element);
  at::Tensor loaded = at::empty(r.shape, at::TensorOptions().dtype(type));
  if (!r.text.empty()) std::memcpy(loaded.data_ptr(), r.text.data(), r.text.size());
  if (!t.defined()) {
    t = loaded;
    return;
  }
  if (t.scalar_type() != type || t.sizes() != loaded.sizes())
    throw CheckpointError(source_ + ": '" + full_name(name) + "' is " + at::toString(type) + " " +
                          shape_list(loaded.sizes().vec()) + " but this run has " + at::toString(t.scalar_type()) +
                          " " + shape_list(t.sizes().vec()) + ": the checkpoint is from a different model or settings");
  at::NoGradGuard no_grad;
  t.copy_(loaded);
}

void StateReader::integer(const std::string& name, int64_t& v) { v = find(name, RecordKind::Integer).integer; }
void StateReader::real(const std::string& name, double& v) { v = find(name, RecordKind::Real).real; }
void StateReader::text(const std::string& name, std::string& v) { v = find(name, RecordKind::Text).text; }

void StateReader::expect_all_read() const {
  for (const auto& item : records_)
    if (!read_.count(item.first))
      throw CheckpointError(source_ + " holds '" + item.first +
                            "', which this run does not have: it was written by a different strategy or settings");
}

// ---- store ----------------------------------------------------------------------

namespace fs = std::filesystem;

std::string worker_part(int64_t rank) { return "worker-" + std::to_string(rank); }

CheckpointStore::CheckpointStore(fs::path run_dir) : folder_(std::move(run_dir) / "checkpoints") {}

fs::path CheckpointStore::file(int64_t step, const std::string& part) const {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return folder_ / name / (part + ".ckpt");
}

void CheckpointStore::write(int64_t step, const std::string& part, const CheckpointRecords& records) const {
  write_file_atomic(file(step, part).string(), serialize_checkpoint(records));
}

CheckpointRecords CheckpointStore::read(int64_t step, const std::string& part) const {
  const fs::path path = file(step, part);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw CheckpointError("checkpoint file '" + path.string() + "' is missing");
  try {
    return parse_checkpoint(read_file_bytes(path.string()));
  } catch (const CheckpointError& e) {
    throw CheckpointError("'" + path.string() + "': " + e.what());
  }
}

std::vector<int64_t> CheckpointStore::steps() const {
  std::vector<int64_t> out;
  std::error_code ec;
  if (!fs::is_directory(folder_, ec)) return out;
  for (const auto& entry : fs::directory_iterator(folder_, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.size() != 13 || name.rfind("step-", 0) != 0) continue;
    if (!std::all_of(name.begin() + 5, name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    out.push_back(std::stoll(name.substr(5)));
  }
  std::sort(out.rbegin(), out.rend());
  return out;
}

bool CheckpointStore::intact(int64_t step, const std::vector<std::string>& parts, std::string* why) const {
  try {
    for (const auto& part : parts) {
      const CheckpointRecords r = read(step, part);
      auto it = r.find("meta.step");
      if (it == r.end() || it->second.kind != RecordKind::Integer || it->second.integer != step)
        throw CheckpointError("'" + file(step, part).string() + "' is not the checkpoint of step " +
                              std::to_string(step));
    }
    return true;
  } catch (const CheckpointError& e) {
    if (why) *why = e.what();
    return false;
  }
}

std::vector<int64_t> CheckpointStore::complete_steps(const std::vector<std::string>& parts) const {
  std::vector<int64_t> out;
  for (int64_t step : steps())
    if (intact(step, parts, nullptr)) out.push_back(step);
  return out;
}

int64_t CheckpointStore::latest_complete(const std::vector<std::string>& parts,
                                         std::vector<std::string>* skipped) const {
  for (int64_t step : steps()) {
    std::string why;
    if (intact(step, parts, &why)) return step;
    if (skipped) skipped->push_back("step " + std::to_string(step) + ": " + why);
  }
  return -1;
}

void CheckpointStore::prune(int64_t keep) const {
  const auto all = steps();
  for (size_t i = static_cast<size_t>(keep); i < all.size(); ++i) {
    std::error_code ec;
    fs::remove_all(file(all[i], "x").parent_path(), ec);
  }
}

void CheckpointStore::remove_after(int64_t step) const {
  for (int64_t s : steps()) {
    if (s <= step) break;
    std::error_code ec;
    fs::remove_all(file(s, "x").parent_path(), ec);
  }
}

std::string trajectory_config(const Config& cfg) { return flat_lines(only_keys(flatten(cfg), shapes_trajectory)); }

std::string trajectory_difference(const std::string& saved, const std::string& now, const std::string& where_saved) {
  return describe_difference(parse_flat_lines(saved), parse_flat_lines(now), where_saved, "now");
}

}  // namespace atl
