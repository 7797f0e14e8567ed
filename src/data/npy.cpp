// NumPy .npy files: the reader (format versions 1.0, 2.0, 3.0) and a
// version 1.0 writer for tests and tools.
//
// The format (numpy/lib/format.py documents it): the magic "\x93NUMPY", a
// major and a minor version byte, the header length (uint16 LE in 1.0,
// uint32 LE in 2.0 and 3.0), then the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (60000, 1, 28, 28), }
// padded with spaces and ending in '\n', then the raw values in C order.
// The header is untrusted text: it is parsed by hand, never evaluated, and
// every size is checked against the bytes actually present before anything
// is allocated, so a hostile file costs at most its own size.
#include "atoll/data.h"
#include "util/file_io.h"
#include "util/format.h"

#include <ATen/ops/empty.h>

#include <cstring>
#include <filesystem>
#include <limits>

namespace atl {
namespace {

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.cpp copies little-endian file data straight into tensors: it needs a little-endian machine"
#endif

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
// Far beyond any data set a CPU simulation trains on, and small enough that
// element count x item size cannot overflow 64 bits.
constexpr uint64_t kNpyMaxBytes = uint64_t{1} << 40;
// numpy's own limit (NPY_MAXDIMS is 32 before numpy 2).
constexpr size_t kNpyMaxDims = 32;

struct NpyDtype {
  const char* descr;
  const char* name;
  uint64_t itemsize;
  at::ScalarType stored;
};
// uint16 has no torch dtype in LibTorch 1.13: it is widened to int32, which
// holds every value.
constexpr NpyDtype kNpyDtypes[] = {{"<f4", "float32", 4, at::kFloat}, {"<i8", "int64", 8, at::kLong},
                                   {"<i4", "int32", 4, at::kInt},     {"<u2", "uint16", 2, at::kInt},
                                   {"|u1", "uint8", 1, at::kByte},    {"<u1", "uint8", 1, at::kByte}};
constexpr const char* kAllowed = "allowed: '<f4' float32, '<i8' int64, '<i4' int32, '<u2' uint16, '|u1' uint8";

[[noreturn]] void fail(const std::string& source, const std::string& what) { throw NpyError(source + ": " + what); }

// Header text for a message: at most `limit` characters, bytes outside
// printable ASCII as \xNN (a corrupt header may hold anything).
std::string printable(const std::string& s, size_t limit = 120) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 32 && c < 127) {
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  if (s.size() > limit) out += "...";
  return out;
}

// What a refused descr is, for the message ('<f2' -> float16).
std::string describe_descr(const std::string& descr) {
  static const std::pair<const char*, const char*> kNames[] = {
      {"f2", "float16"}, {"f8", "float64"}, {"f16", "float128"}, {"i1", "int8"},      {"i2", "int16"},
      {"u4", "uint32"},  {"u8", "uint64"},  {"b1", "bool"},      {"c8", "complex64"}, {"c16", "complex128"}};
  const std::string code = descr.size() > 1 ? descr.substr(1) : descr;
  for (const auto& [c, name] : kNames)
    if (code == c) return "'" + descr + "' (" + name + ")";
  return "'" + descr + "'";
}

// The header dict, read by a small recursive-descent parser over exactly
// what numpy writes: string keys, a string descr, True/False and a tuple of
// non-negative integers; spaces anywhere between tokens, a trailing comma.
struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_order = false, seen_shape = false;
    space();
    if (!eat('{')) bad("does not start with '{'");
    for (;;) {
      space();
      if (eat('}')) break;
      const std::string key = string_literal("a key");
      space();
      if (!eat(':')) bad("expected ':' after key '" + printable(key, 40) + "'");
      space();
      if (key == "descr") {
        if (seen_descr) bad("key 'descr' appears twice");
        seen_descr = true;
        if (peek() == '[')
          fail(source_,
               "structured arrays (a list of fields as descr) are not supported; save one "
               "plain array per file (" +
                   std::string(kAllowed) + ")");
        h.descr = string_literal("the descr string");
      } else if (key == "fortran_order") {
        if (seen_order) bad("key 'fortran_order' appears twice");
        seen_order = true;
        h.fortran_order = boolean();
      } else if (key == "shape") {
        if (seen_shape) bad("key 'shape' appears twice");
        seen_shape = true;
        h.shape = shape();
      } else {
        bad("unexpected key '" + printable(key, 40) +
            "' (a .npy header holds exactly 'descr', 'fortran_order' and 'shape')");
      }
      space();
      if (eat(',')) continue;
      space();
      if (eat('}')) break;
      bad("expected ',' or '}' after the value of '" + key + "'");
    }
    space();
    if (pos_ != text_.size()) bad("text after the closing '}'");
    if (!seen_descr || !seen_order || !seen_shape)
      bad(std::string("lacks ") +
          (!seen_descr   ? "'descr'"
           : !seen_order ? "'fortran_order'"
                         : "'shape'") +
          " (a .npy header holds exactly 'descr', 'fortran_order' and 'shape')");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& what) const {
    fail(source_, "the header is not a .npy header dict: " + what + " at character " + std::to_string(pos_) + " of \"" +
                      printable(text_) + "\"");
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool word(const char* w) {
    const size_t n = std::strlen(w);
    if (text_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  // '...' or "..." without escapes (numpy's keys and descrs never need one).
  std::string string_literal(const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') bad(std::string("expected ") + what + " in quotes");
    const size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') bad("escapes in strings are not supported");
      ++pos_;
    }
    if (pos_ == text_.size()) bad("unterminated string");
    return text_.substr(start, pos_++ - start);
  }
  bool boolean() {
    if (word("True")) return true;
    if (word("False")) return false;
    bad("fortran_order must be True or False");
  }
  // (d0, d1, ...), (d0,) or (); each d a non-negative decimal integer.
  std::vector<int64_t> shape() {
    std::vector<int64_t> dims;
    if (!eat('(')) bad("shape must be a tuple such as (60000, 784)");
    for (;;) {
      space();
      if (eat(')')) break;
      dims.push_back(dimension(dims.size()));
      space();
      if (eat(',')) continue;
      space();
      if (eat(')')) break;
      bad("expected ',' or ')' in the shape");
    }
    return dims;
  }
  int64_t dimension(size_t index) {
    const std::string which = "dimension " + std::to_string(index) + " of the shape";
    if (peek() == '-') fail(source_, which + " is negative");
    if (peek() < '0' || peek() > '9') bad(which + " is not an integer");
    uint64_t v = 0;
    bool too_large = false;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(text_[pos_++] - '0');
      if (v > kNpyMaxBytes) {
        too_large = true;
        v = kNpyMaxBytes;  // keeps reading the digits without overflowing
      }
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E') bad(which + " is not an integer");
    eat('L');  // Python 2 numpy wrote long integers as 3L
    if (too_large) fail(source_, which + " is larger than 2^40; arrays are limited to 2^40 bytes");
    return static_cast<int64_t>(v);
  }

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
};

const NpyDtype& find_dtype(const std::string& descr, const std::string& source) {
  for (const NpyDtype& d : kNpyDtypes)
    if (descr == d.descr) return d;
  if (descr == "O" || descr == "|O" || descr == "<O" || descr == ">O")
    fail(source,
         "object arrays (dtype=object) hold pickled Python objects and cannot be read; save "
         "a numeric array (" +
             std::string(kAllowed) + ")");
  if (!descr.empty() && descr[0] == '>')
    fail(source, "big-endian data (descr " + describe_descr(descr) +
                     ") are not supported; save them little-endian, e.g. np.save(path, "
                     "arr.astype(arr.dtype.newbyteorder('<')))");
  fail(source, "unsupported dtype " + describe_descr(descr) + "; " + kAllowed +
                   " (convert with arr.astype(np.float32) or arr.astype(np.int64))");
}

uint64_t read_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int k = 0; k < bytes; ++k) v |= uint64_t{p[k]} << (8 * k);
  return v;
}

}  // namespace

NpyArray parse_npy(const std::string& bytes, const std::string& source) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kMagicSize || bytes.compare(0, kMagicSize, kNpyMagic, kMagicSize) != 0)
    fail(source, "not a .npy file (it does not start with the magic \"\\x93NUMPY\")");
  if (bytes.size() < kMagicSize + 2) fail(source, "truncated: the file ends inside the version bytes");
  const int major = p[6], minor = p[7];
  if (!(major >= 1 && major <= 3 && minor == 0))
    fail(source, ".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                     " is not supported (1.0, 2.0 and 3.0 are)");
  // 1.0 stores the header length in 2 bytes; 2.0 and 3.0 (3.0: the header
  // is UTF-8 rather than latin-1) in 4.
  const int length_bytes = major == 1 ? 2 : 4;
  const size_t header_start = kMagicSize + 2 + static_cast<size_t>(length_bytes);
  if (bytes.size() < header_start) fail(source, "truncated: the file ends inside the header length");
  const uint64_t header_len = read_le(p + 8, length_bytes);
  if (header_len > bytes.size() - header_start)
    fail(source, "the header length " + std::to_string(header_len) + " runs past the end of the file (" +
                     std::to_string(bytes.size() - header_start) + " bytes follow it)");
  const size_t data_start = header_start + static_cast<size_t>(header_len);
  const std::string text = bytes.substr(header_start, static_cast<size_t>(header_len));
  const Header h = HeaderParser(text, source).parse();

  const NpyDtype& dtype = find_dtype(h.descr, source);
  if (h.fortran_order)
    fail(source,
         "fortran_order is True (column-major data); save it in C order with "
         "np.save(path, np.ascontiguousarray(arr))");
  if (h.shape.empty())
    fail(source,
         "a 0-d array (shape ()) holds a single value; data need at least one dimension "
         "(the examples), e.g. np.save(path, arr.reshape(1))");
  if (h.shape.size() > kNpyMaxDims)
    fail(source, "shape has " + std::to_string(h.shape.size()) + " dimensions; at most " + std::to_string(kNpyMaxDims) +
                     " are supported");
  // Each dimension is <= 2^40 (the parser checks); checking before each
  // multiplication keeps the product below 2^40 too. Zero dimensions are
  // skipped rather than ending the check: LibTorch refuses to allocate a
  // shape whose other dimensions overflow even when one of them is 0.
  uint64_t nonzero_product = 1;
  bool zero = false;
  for (int64_t d : h.shape) {
    if (d == 0) {
      zero = true;
      continue;
    }
    if (nonzero_product > kNpyMaxBytes / static_cast<uint64_t>(d))
      fail(source, "shape " + shape_tuple(h.shape) + " is too large (over 2^40 elements)");
    nonzero_product *= static_cast<uint64_t>(d);
  }
  const uint64_t elements = zero ? 0 : nonzero_product;
  if (elements > kNpyMaxBytes / dtype.itemsize)
    fail(source, "shape " + shape_tuple(h.shape) + " of " + dtype.name + " is too large: over 2^40 bytes");
  const uint64_t expected = elements * dtype.itemsize;
  const uint64_t found = bytes.size() - data_start;
  if (found < expected)
    fail(source, "truncated data: shape " + shape_tuple(h.shape) + " of " + dtype.name + " needs " +
                     std::to_string(expected) + " bytes but " + std::to_string(found) + " follow the header");
  if (found > expected)
    fail(source, std::to_string(found - expected) + " trailing bytes after the data: shape " + shape_tuple(h.shape) +
                     " of " + dtype.name + " needs " + std::to_string(expected) + " bytes but " +
                     std::to_string(found) + " follow the header");

  NpyArray out;
  out.dtype = dtype.name;
  out.shape = h.shape;
  out.values = at::empty(h.shape, dtype.stored);
  const unsigned char* data = p + data_start;
  if (std::string(dtype.name) == "uint16") {
    int32_t* dst = out.values.data_ptr<int32_t>();
    for (uint64_t i = 0; i < elements; ++i) dst[i] = static_cast<int32_t>(read_le(data + 2 * i, 2));
  } else if (expected > 0) {
    std::memcpy(out.values.data_ptr(), data, static_cast<size_t>(expected));
  }
  return out;
}

NpyArray read_npy(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw NpyError(path + ": no such file");
  if (std::filesystem::is_directory(path, ec)) throw NpyError(path + ": is a folder, not a .npy file");
  std::string bytes;
  try {
    bytes = read_file_bytes(path);
  } catch (const std::runtime_error& e) {
    throw NpyError(path + ": cannot be read (" + e.what() + ")");
  }
  return parse_npy(bytes, path);
}

std::string encode_npy(const at::Tensor& t) {
  if (!t.defined()) throw std::invalid_argument("encode_npy: the tensor is undefined");
  if (t.dim() == 0)
    throw std::invalid_argument(
        "encode_npy: a 0-d tensor; .npy data need at least one dimension "
        "(read_npy refuses 0-d arrays)");
  const char* descr = nullptr;
  switch (t.scalar_type()) {
    case at::kFloat:
      descr = "<f4";
      break;
    case at::kLong:
      descr = "<i8";
      break;
    case at::kInt:
      descr = "<i4";
      break;
    case at::kByte:
      descr = "|u1";
      break;
    default:
      throw std::invalid_argument(std::string("encode_npy: dtype ") + c10::toString(t.scalar_type()) +
                                  " cannot be written (float32, int64, int32 and uint8 can)");
  }
  const at::Tensor c = t.cpu().contiguous();
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape_tuple(c.sizes().vec()) + ", }";
  // numpy pads with spaces so that magic + version + length + header + '\n'
  // is a multiple of 64: the data then start aligned for memory mapping.
  const size_t prefix = kMagicSize + 2 + 2;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  if (header.size() > std::numeric_limits<uint16_t>::max())
    throw std::invalid_argument("encode_npy: the header does not fit a version 1.0 file");
  std::string out(kNpyMagic, kMagicSize);
  out.push_back('\x01');
  out.push_back('\x00');
  out.push_back(static_cast<char>(header.size() & 0xFF));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  const size_t nbytes = static_cast<size_t>(c.numel()) * c.element_size();
  if (nbytes > 0) out.append(static_cast<const char*>(c.data_ptr()), nbytes);
  return out;
}

void write_npy(const std::string& path, const at::Tensor& t) {
  std::string bytes;
  try {
    bytes = encode_npy(t);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
  write_file_atomic(path, bytes);
}

}  // namespace atl
