// The safetensors reader and writer (format in safetensors.h).
#include "model/safetensors.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "util/file_io.h"
#include "util/format.h"

// Tensor bytes are copied as they lie in memory; the format is little-endian.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors.cpp assumes a little-endian machine");

namespace atl {
namespace {

using nlohmann::json;

struct TensorDtype {
  const char* name;
  at::ScalarType type;
  uint64_t itemsize;
};

// Every dtype both the format and LibTorch 1.13 have.
const TensorDtype kTensorDtypes[] = {
    {"BOOL", at::kBool, 1}, {"U8", at::kByte, 1},    {"I8", at::kChar, 1},  {"I16", at::kShort, 2},
    {"I32", at::kInt, 4},   {"I64", at::kLong, 8},   {"F16", at::kHalf, 2}, {"BF16", at::kBFloat16, 2},
    {"F32", at::kFloat, 4}, {"F64", at::kDouble, 8},
};
const char* const kSupportedList = "BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64";

// Valid safetensors dtypes without a LibTorch 1.13 type: named in the error
// so that a user knows the file is fine and atoll is the limit.
const char* const kUnsupported[] = {"U16",     "U32",     "U64",     "F8_E4M3", "F8_E5M2",
                                    "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4",      "C64"};

// The reference implementation refuses headers above 100 MB: a header that
// large is an attack or a mistake, and its JSON would take gigabytes.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// Any real tensor has a handful of dimensions; a cap keeps a hostile header
// from making LibTorch allocate sizes and strides for millions of them.
constexpr size_t kTensorMaxRank = 64;
constexpr uint64_t kTensorMaxBytes = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

const TensorDtype* dtype_named(const std::string& name) {
  for (const TensorDtype& d : kTensorDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const TensorDtype* dtype_of(at::ScalarType type) {
  for (const TensorDtype& d : kTensorDtypes)
    if (type == d.type) return &d;
  return nullptr;
}

// A name as JSON (quoted, escaped) for messages: control characters and
// invalid UTF-8 (replaced) cannot garble a terminal.
std::string shown(const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); }

// A string as JSON for the header; the format requires UTF-8.
std::string json_string(const std::string& s, const std::string& what) {
  try {
    return json(s).dump();
  } catch (const json::exception&) {
    throw SafetensorsError(what + " is not valid UTF-8");
  }
}

std::string kind_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "an object";
    case json::value_t::array:
      return "an array";
    case json::value_t::string:
      return "a string";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::binary:
      return "binary";
    case json::value_t::discarded:
      return "nothing";
    default:
      return "the number " + v.dump();
  }
}

// Builds messages that start with the source.
struct Failer {
  const std::string& source;
  [[noreturn]] void operator()(const std::string& what) const { throw SafetensorsError(source + ": " + what); }
};

// `v` as an integer in [0, 2^63); `what` names it in the message.
uint64_t non_negative(const json& v, const Failer& fail, const std::string& what) {
  if (v.is_number_unsigned()) {
    const uint64_t x = v.get<uint64_t>();
    if (x > kTensorMaxBytes) fail(what + " is " + std::to_string(x) + ", more than 2^63 - 1");
    return x;
  }
  if (v.is_number_integer()) {
    const int64_t x = v.get<int64_t>();
    if (x < 0) fail(what + " is negative (" + std::to_string(x) + ")");
    return static_cast<uint64_t>(x);
  }
  fail(what + " is " + kind_of(v) + ", not an integer");
}

// The header's JSON. Besides parsing, it refuses what nlohmann::json would
// accept silently: a key repeated in one object (it keeps the last value,
// where another reader may keep the first, so the file would mean two
// things), and nesting deeper than the format has (root object -> entry
// object -> shape array), which also bounds the work and memory per byte.
json parse_header(const char* begin, const char* end, const Failer& fail) {
  if (*begin != '{') fail("the header does not start with '{' (it must be one JSON object)");
  std::vector<std::set<std::string>> keys;  // per open object
  std::string entry;                        // the root key being read, for messages
  auto where = [&](int depth) {
    if (depth <= 1) return std::string("header");
    return entry == "__metadata__" ? entry : "tensor " + shown(entry);
  };
  json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth > 2)
          fail(where(depth) +
               ": a value is nested deeper than the format allows "
               "(an entry is an object of a string and arrays of integers)");
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (depth == 1) entry = key;
        if (!keys.empty() && !keys.back().insert(key).second) {
          if (depth == 1) fail("the header names " + shown(key) + " twice");
          fail(where(depth) + ": key " + shown(key) + " appears twice");
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(begin, end, check);
  } catch (const json::exception& e) {
    fail(std::string("the header is not valid JSON: ") + e.what());
  }
}

struct Entry {
  std::string name;
  const TensorDtype* dtype = nullptr;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

Entry parse_entry(const std::string& name, const json& v, uint64_t buffer_size, const Failer& fail) {
  const std::string who = "tensor " + shown(name);
  if (!v.is_object()) fail(who + ": its entry is " + kind_of(v) + ", not an object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) fail(who + ": the entry has no \"" + key + "\"");
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it.key() != "dtype" && it.key() != "shape" && it.key() != "data_offsets")
      fail(who + ": unexpected key " + shown(it.key()) + " (an entry has exactly dtype, shape and data_offsets)");

  Entry e;
  e.name = name;
  const json& dtype = v["dtype"];
  if (!dtype.is_string()) fail(who + ": dtype is " + kind_of(dtype) + ", not a string");
  const std::string& dtype_name = dtype.get_ref<const std::string&>();
  e.dtype = dtype_named(dtype_name);
  if (!e.dtype) {
    for (const char* u : kUnsupported)
      if (dtype_name == u)
        fail(who + ": dtype " + dtype_name +
             " is valid safetensors but atoll cannot read it (LibTorch 1.13 has no such "
             "type; readable: " +
             kSupportedList + ")");
    fail(who + ": unknown dtype " + shown(dtype_name) + " (readable: " + kSupportedList + ")");
  }

  const json& shape = v["shape"];
  if (!shape.is_array()) fail(who + ": shape is " + kind_of(shape) + ", not an array");
  if (shape.size() > kTensorMaxRank)
    fail(who + ": shape has " + std::to_string(shape.size()) + " dimensions; atoll reads at most " +
         std::to_string(kTensorMaxRank));
  // The product of the non-zero sizes must fit too: LibTorch's strides are
  // products of the sizes (zeros counted as ones), even for an empty tensor.
  uint64_t elements = 1, nonzero = 1;
  bool overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    const uint64_t d = non_negative(shape[i], fail, who + ": shape dimension " + std::to_string(i));
    e.shape.push_back(static_cast<int64_t>(d));
    if (d == 0)
      elements = 0;
    else
      overflow |= __builtin_mul_overflow(nonzero, d, &nonzero);
  }
  uint64_t nonzero_bytes = 0;
  overflow |= __builtin_mul_overflow(nonzero, e.dtype->itemsize, &nonzero_bytes);
  if (overflow || nonzero_bytes > kTensorMaxBytes)
    fail(who + ": shape " + shape_list(e.shape) + " of " + e.dtype->name + " is too large (more than 2^63 bytes)");
  if (elements != 0) elements = nonzero;
  const uint64_t nbytes = elements * e.dtype->itemsize;  // <= nonzero_bytes: no overflow

  const json& offsets = v["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2)
    fail(who + ": data_offsets is " + kind_of(offsets) +
         (offsets.is_array() ? " of " + std::to_string(offsets.size()) + " values" : "") +
         ", not an array [begin, end]");
  e.begin = non_negative(offsets[0], fail, who + ": data_offsets begin");
  e.end = non_negative(offsets[1], fail, who + ": data_offsets end");
  const std::string range = "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  if (e.begin > e.end) fail(who + ": " + range + " end before they begin");
  if (e.end > buffer_size)
    fail(who + ": " + range + " go past the end of the data buffer (" + std::to_string(buffer_size) + " bytes)");
  if (e.end - e.begin != nbytes)
    fail(who + ": " + range + " hold " + std::to_string(e.end - e.begin) + " bytes, but shape " + shape_list(e.shape) +
         " of " + e.dtype->name + " needs " + std::to_string(nbytes));
  return e;
}

std::map<std::string, std::string> parse_metadata(const json& v, const Failer& fail) {
  if (!v.is_object()) fail("__metadata__ is " + kind_of(v) + ", not an object of strings");
  std::map<std::string, std::string> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it.value().is_string())
      fail("__metadata__ value of " + shown(it.key()) + " is " + kind_of(it.value()) + ", not a string");
    out.emplace(it.key(), it.value().get<std::string>());
  }
  return out;
}

}  // namespace

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& source) {
  const Failer fail{source};
  if (bytes.size() < 8)
    fail("too short for a safetensors file (" + std::to_string(bytes.size()) +
         " bytes; the header size field alone takes 8)");
  uint64_t header_size = 0;
  std::memcpy(&header_size, bytes.data(), sizeof header_size);
  const uint64_t after_size = bytes.size() - 8;
  if (header_size < 2) fail("header size " + std::to_string(header_size) + " is too small for a JSON object");
  if (header_size > kMaxHeaderBytes)
    fail("header size " + std::to_string(header_size) +
         " is above the format's limit of 100 MB "
         "(a damaged file, or not a safetensors file)");
  if (header_size > after_size)
    fail("header size " + std::to_string(header_size) + " goes past the end of the file (" +
         std::to_string(after_size) + " bytes after the size field; truncated?)");
  const char* header_begin = bytes.data() + 8;
  const json header = parse_header(header_begin, header_begin + header_size, fail);
  if (!header.is_object()) fail("the header is " + kind_of(header) + ", not a JSON object");

  const uint64_t buffer_size = after_size - header_size;
  const char* buffer = header_begin + header_size;
  SafetensorsFile out;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      out.metadata = parse_metadata(it.value(), fail);
    else
      entries.push_back(parse_entry(it.key(), it.value(), buffer_size, fail));
  }

  // The format requires the byte ranges to tile the buffer: sorted, each
  // starts where the previous ended, and the last ends at the end of the file.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    const std::string who =
        "tensor " + shown(e.name) + " (bytes [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "))";
    if (e.begin < covered)
      fail(who + " overlaps tensor " + shown(previous->name) + " (bytes [" + std::to_string(previous->begin) + ", " +
           std::to_string(previous->end) + "))");
    if (e.begin > covered)
      fail(who + " leaves a hole: bytes [" + std::to_string(covered) + ", " + std::to_string(e.begin) +
           ") of the data buffer belong to no tensor");
    covered = e.end;
    previous = &e;
  }
  if (covered != buffer_size)
    fail("bytes [" + std::to_string(covered) + ", " + std::to_string(buffer_size) +
         ") at the end of the data buffer belong to no tensor");

  out.tensors.reserve(entries.size());
  for (const Entry& e : entries) {
    const char* data = buffer + e.begin;
    const uint64_t nbytes = e.end - e.begin;
    // A LibTorch bool must be 0 or 1; any other byte is undefined behaviour
    // in every operation that reads it.
    if (e.dtype->type == at::kBool)
      for (uint64_t i = 0; i < nbytes; ++i)
        if (static_cast<unsigned char>(data[i]) > 1)
          fail("tensor " + shown(e.name) + ": BOOL element " + std::to_string(i) + " is " +
               std::to_string(static_cast<unsigned char>(data[i])) + ", not 0 or 1");
    at::Tensor t = at::empty(e.shape, at::TensorOptions().dtype(e.dtype->type));
    if (nbytes > 0) std::memcpy(t.data_ptr(), data, nbytes);
    out.tensors.push_back({e.name, std::move(t)});
  }
  return out;
}

std::string encode_safetensors(const std::vector<NamedTensor>& tensors,
                               const std::map<std::string, std::string>& metadata) {
  std::set<std::string> names;
  std::vector<at::Tensor> data;
  data.reserve(tensors.size());
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      header += (first ? "" : ",") + json_string(key, "a __metadata__ key") + ":" +
                json_string(value, "__metadata__ value of " + shown(key));
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const NamedTensor& nt : tensors) {
    const std::string who = "tensor " + shown(nt.name);
    if (nt.name == "__metadata__") throw SafetensorsError(who + ": the name is reserved for the metadata");
    if (!names.insert(nt.name).second) throw SafetensorsError(who + ": the name appears twice");
    const std::string key = json_string(nt.name, who + ": the name");
    if (!nt.tensor.defined()) throw SafetensorsError(who + ": the tensor is undefined");
    if (nt.tensor.layout() != at::kStrided)
      throw SafetensorsError(who + ": only dense tensors can be saved (this one is sparse or another layout)");
    const TensorDtype* dtype = dtype_of(nt.tensor.scalar_type());
    if (!dtype)
      throw SafetensorsError(who + ": dtype " + std::string(c10::toString(nt.tensor.scalar_type())) +
                             " cannot be saved (supported: " + kSupportedList + ")");
    // Views with a pending negation or conjugation would be copied unresolved.
    at::Tensor t = nt.tensor.detach().resolve_neg().resolve_conj().to(at::kCPU).contiguous();
    const uint64_t nbytes = static_cast<uint64_t>(t.numel()) * dtype->itemsize;
    std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    std::string dims;
    for (size_t i = 0; i < shape.size(); ++i) dims += (i ? "," : "") + std::to_string(shape[i]);
    header += std::string(header.size() > 1 ? "," : "") + key + ":{\"dtype\":\"" + dtype->name + "\",\"shape\":[" +
              dims + "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + nbytes) + "]}";
    offset += nbytes;
    data.push_back(std::move(t));
  }
  header += "}";
  // Spaces (JSON whitespace) so that the buffer starts 8-byte aligned, as the
  // reference writer pads it: readers may map the file and use it in place.
  header.append((8 - header.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + header.size() + offset);
  const uint64_t header_size = header.size();
  out.append(reinterpret_cast<const char*>(&header_size), sizeof header_size);
  out += header;
  for (const at::Tensor& t : data)
    if (t.numel() > 0) out.append(static_cast<const char*>(t.data_ptr()), t.numel() * t.element_size());
  return out;
}

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::string bytes;
  try {
    bytes = encode_safetensors(tensors, metadata);
  } catch (const SafetensorsError& e) {
    throw SafetensorsError(path + ": " + e.what());
  }
  try {
    write_file_atomic(path, bytes);
  } catch (const std::exception& e) {
    throw SafetensorsError(path + ": not written (" + e.what() + ")");
  }
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file_bytes(path);
  } catch (const std::exception& e) {
    throw SafetensorsError(path + ": cannot read (" + e.what() + ")");
  }
  return parse_safetensors(bytes, path);
}

}  // namespace atl
