// The safetensors reader and writer: round trips of every dtype and of the
// metadata, the exact bytes of a small file (what other tools read), the
// reader's refusals of damaged files, and atomic writes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "model/safetensors.h"
#include "test_util.h"

namespace atl {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Same dtype, shape and bytes (NaN payloads and -0 included).
::testing::AssertionResult same_tensor(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type())
    return ::testing::AssertionFailure() << "dtype " << a.scalar_type() << " vs " << b.scalar_type();
  if (a.sizes() != b.sizes()) return ::testing::AssertionFailure() << "shape " << a.sizes() << " vs " << b.sizes();
  const at::Tensor x = a.contiguous(), y = b.contiguous();
  const size_t n = static_cast<size_t>(x.numel()) * x.element_size();
  if (n > 0 && std::memcmp(x.data_ptr(), y.data_ptr(), n) != 0) return ::testing::AssertionFailure() << "bytes differ";
  return ::testing::AssertionSuccess();
}

// The 8-byte little-endian header size, the header text and the buffer.
std::string file_bytes(const std::string& header, const std::string& buffer = "") {
  const uint64_t n = header.size();
  std::string out(reinterpret_cast<const char*>(&n), 8);
  return out + header + buffer;
}

std::string size_field(uint64_t n) { return std::string(reinterpret_cast<const char*>(&n), 8); }

// The message of the SafetensorsError `fn` throws ("" if none, or another exception).
template <typename Fn>
std::string safetensors_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const SafetensorsError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a SafetensorsError: ") + e.what();
  }
  return "";
}

std::vector<NamedTensor> every_dtype() {
  at::manual_seed(3);
  const at::Tensor f = at::randn({2, 3}, at::kDouble) * 1e3;
  std::vector<NamedTensor> out = {
      {"bool", at::randint(0, 2, {2, 3}, at::kLong).to(at::kBool)},
      {"u8", at::arange(250, 256, at::kLong).view({2, 3}).to(at::kByte)},
      {"i8", at::arange(-3, 3, at::kLong).view({3, 2}).to(at::kChar)},
      {"i16", (at::arange(6, at::kLong) * -7001).to(at::kShort)},
      {"i32", (at::arange(6, at::kLong) * -300000007).view({1, 6}).to(at::kInt)},
      {"i64", (at::arange(6, at::kLong) * (int64_t(1) << 60) / 6 - (int64_t(1) << 58)).view({2, 1, 3})},
      {"f16", f.to(at::kHalf)},
      {"bf16", f.to(at::kBFloat16)},
      {"f32", f.to(at::kFloat)},
      {"f64", f},
  };
  // Values that must survive bit for bit.
  at::Tensor special = at::zeros({5}, at::kFloat);
  special[0] = std::numeric_limits<float>::quiet_NaN();
  special[1] = std::numeric_limits<float>::infinity();
  special[2] = -0.0f;
  special[3] = std::numeric_limits<float>::denorm_min();
  special[4] = -std::numeric_limits<float>::max();
  out.push_back({"f32.special", special});
  out.push_back({"scalar", at::scalar_tensor(7.5, at::kDouble)});
  out.push_back({"empty", at::zeros({0, 4}, at::kFloat)});
  out.push_back({"transposed", at::arange(12, at::kFloat).view({3, 4}).t()});  // not contiguous
  return out;
}

TEST(Safetensors, EveryDtypeRoundTripsThroughAFile) {
  TempDir dir;
  const std::vector<NamedTensor> tensors = every_dtype();
  write_safetensors(dir / "all.safetensors", tensors);
  const SafetensorsFile back = read_safetensors(dir / "all.safetensors");
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].name);
    EXPECT_EQ(back.tensors[i].name, tensors[i].name);  // written in the given order
    EXPECT_TRUE(same_tensor(back.tensors[i].tensor, tensors[i].tensor));
    EXPECT_TRUE(back.tensors[i].tensor.is_contiguous());
    EXPECT_TRUE(back.tensors[i].tensor.device().is_cpu());
  }
  EXPECT_TRUE(back.metadata.empty());
  EXPECT_EQ(fs::file_size(dir / "all.safetensors"), encode_safetensors(tensors).size());
  EXPECT_FALSE(atl::testing::temp_file_left(dir / "all.safetensors"));
}

TEST(Safetensors, MetadataRoundTrips) {
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"empty", ""}, {"quote\"and\\slash", "line\nbreak\ttab"}, {"unicode", "Kraków ✓"}};
  const std::string bytes = encode_safetensors({{"w", at::ones({2}, at::kFloat)}}, metadata);
  const SafetensorsFile back = parse_safetensors(bytes, "test");
  EXPECT_EQ(back.metadata, metadata);
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_TRUE(same_tensor(back.tensors[0].tensor, at::ones({2}, at::kFloat)));
  // Metadata alone, no tensors: a valid (if odd) file.
  EXPECT_EQ(parse_safetensors(encode_safetensors({}, metadata), "test").metadata, metadata);
}

TEST(Safetensors, ByteLayoutOfATinyFile) {
  at::Tensor a = at::empty({2}, at::kFloat);
  a[0] = 1.0f;
  a[1] = -2.0f;
  at::Tensor b = at::arange(1, 4, at::kLong).to(at::kByte);
  const std::string bytes = encode_safetensors({{"a", a}, {"b", b}});
  // 107 bytes of JSON, padded with 5 spaces to 112 so the buffer starts at
  // byte 120, a multiple of 8.
  const std::string json =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  ASSERT_EQ(json.size(), 107u);
  ASSERT_EQ(bytes.size(), 8u + 112u + 11u);
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x70\0\0\0\0\0\0\0", 8));  // 112, little-endian
  EXPECT_EQ(bytes.substr(8, 112), json + "     ");
  // 1.0f = 0x3f800000, -2.0f = 0xc0000000, little-endian; then the bytes 1 2 3.
  EXPECT_EQ(bytes.substr(120), std::string("\0\0\x80\x3f\0\0\0\xc0\x01\x02\x03", 11));

  // Metadata comes first; 85 bytes of JSON padded to 88.
  const std::string with_meta = encode_safetensors({{"a", a}}, {{"format", "pt"}});
  const std::string meta_json =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_EQ(meta_json.size(), 85u);
  ASSERT_EQ(with_meta.size(), 8u + 88u + 8u);
  EXPECT_EQ(with_meta.substr(0, 8), std::string("\x58\0\0\0\0\0\0\0", 8));  // 88
  EXPECT_EQ(with_meta.substr(8, 88), meta_json + "   ");
}

TEST(Safetensors, ReadsOtherWritersLayoutsInDataOrder) {
  // Keys not in data order, whitespace, no padding, metadata last: all valid.
  std::string buffer(12, '\0');
  const float one = 1.0f;
  const int64_t seven = 7;
  std::memcpy(&buffer[0], &seven, 8);
  std::memcpy(&buffer[8], &one, 4);
  const std::string header =
      "{ \"z\": {\"shape\": [], \"dtype\": \"I64\", \"data_offsets\": [0, 8]},\n"
      "  \"a\": {\"data_offsets\": [8, 12], \"dtype\": \"F32\", \"shape\": [1, 1]},\n"
      "  \"nothing\": {\"dtype\": \"F64\", \"shape\": [0], \"data_offsets\": [12, 12]},\n"
      "  \"__metadata__\": {\"k\": \"v\"} }";
  const SafetensorsFile f = parse_safetensors(file_bytes(header, buffer), "other");
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors[0].name, "z");
  EXPECT_EQ(f.tensors[0].tensor.dim(), 0);
  EXPECT_EQ(f.tensors[0].tensor.item<int64_t>(), 7);
  EXPECT_EQ(f.tensors[1].name, "a");
  EXPECT_EQ(f.tensors[1].tensor.sizes(), at::IntArrayRef({1, 1}));
  EXPECT_EQ(f.tensors[1].tensor.item<float>(), 1.0f);
  EXPECT_EQ(f.tensors[2].name, "nothing");
  EXPECT_EQ(f.tensors[2].tensor.numel(), 0);
  EXPECT_EQ(f.metadata.at("k"), "v");
}

struct BadInput {
  const char* name;
  std::string bytes;
  const char* expected;  // part of the message
};

std::string entry(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return "{\"dtype\":" + dtype + ",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
}

TEST(Safetensors, RefusesDamagedFilesNamingTheProblem) {
  const std::string f32x1 = entry("\"F32\"", "[1]", "[0,4]");
  const std::vector<BadInput> cases = {
      {"short file", "abc", "too short for a safetensors file (3 bytes"},
      {"header size zero", size_field(0) + "{}", "header size 0 is too small"},
      {"header size past the end", size_field(100) + "{}", "header size 100 goes past the end of the file (2 bytes"},
      {"header size above 100 MB", size_field(uint64_t(1) << 40) + "{}", "above the format's limit of 100 MB"},
      {"not JSON", file_bytes("{abc"), "the header is not valid JSON"},
      {"trailing garbage", file_bytes("{} x"), "the header is not valid JSON"},
      {"not an object", file_bytes("[1, 2]"), "does not start with '{' (it must be one JSON object)"},
      {"entry not an object", file_bytes("{\"a\":3}"), "tensor \"a\": its entry is the number 3, not an object"},
      {"missing key", file_bytes("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "abcd"),
       "tensor \"a\": the entry has no \"data_offsets\""},
      {"extra key", file_bytes("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", "abcd"),
       "tensor \"a\": unexpected key \"x\""},
      {"unknown dtype", file_bytes("{\"a\":" + entry("\"F33\"", "[1]", "[0,4]") + "}", "abcd"),
       "tensor \"a\": unknown dtype \"F33\""},
      {"unreadable dtype", file_bytes("{\"a\":" + entry("\"U16\"", "[2]", "[0,4]") + "}", "abcd"),
       "tensor \"a\": dtype U16 is valid safetensors but atoll cannot read it"},
      {"dtype not a string", file_bytes("{\"a\":" + entry("4", "[1]", "[0,4]") + "}", "abcd"),
       "tensor \"a\": dtype is the number 4, not a string"},
      {"negative shape", file_bytes("{\"a\":" + entry("\"F32\"", "[2,-1]", "[0,4]") + "}", "abcd"),
       "tensor \"a\": shape dimension 1 is negative (-1)"},
      {"fractional shape", file_bytes("{\"a\":" + entry("\"F32\"", "[1.5]", "[0,4]") + "}", "abcd"),
       "tensor \"a\": shape dimension 0 is the number 1.5, not an integer"},
      {"shape not an array", file_bytes("{\"a\":" + entry("\"F32\"", "\"1\"", "[0,4]") + "}", "abcd"),
       "tensor \"a\": shape is a string, not an array"},
      {"shape overflows", file_bytes("{\"a\":" + entry("\"F32\"", "[4294967296,4294967296]", "[0,4]") + "}", "abcd"),
       "tensor \"a\": shape [4294967296, 4294967296] of F32 is too large"},
      {"shape with zero overflows", file_bytes("{\"a\":" + entry("\"U8\"", "[0,4294967296,4294967296]", "[0,0]") + "}"),
       "tensor \"a\": shape [0, 4294967296, 4294967296] of U8 is too large"},
      {"offsets past the buffer", file_bytes("{\"a\":" + entry("\"F32\"", "[2]", "[0,8]") + "}", "abcd"),
       "tensor \"a\": data_offsets [0, 8] go past the end of the data buffer (4 bytes)"},
      {"offsets reversed", file_bytes("{\"a\":" + entry("\"F32\"", "[1]", "[4,0]") + "}", "abcd"),
       "tensor \"a\": data_offsets [4, 0] end before they begin"},
      {"one offset", file_bytes("{\"a\":" + entry("\"F32\"", "[1]", "[4]") + "}", "abcd"),
       "tensor \"a\": data_offsets is an array of 1 values, not an array [begin, end]"},
      {"negative offset", file_bytes("{\"a\":" + entry("\"F32\"", "[1]", "[-4,0]") + "}", "abcd"),
       "tensor \"a\": data_offsets begin is negative (-4)"},
      {"size not shape x itemsize", file_bytes("{\"a\":" + entry("\"F32\"", "[2]", "[0,4]") + "}", "abcd"),
       "tensor \"a\": data_offsets [0, 4] hold 4 bytes, but shape [2] of F32 needs 8"},
      {"overlapping tensors",
       file_bytes("{\"a\":" + f32x1 + ",\"b\":" + entry("\"U8\"", "[4]", "[2,6]") + "}", "abcdef"),
       "tensor \"b\" (bytes [2, 6)) overlaps tensor \"a\" (bytes [0, 4))"},
      {"a hole in the buffer",
       file_bytes("{\"a\":" + f32x1 + ",\"b\":" + entry("\"U8\"", "[1]", "[5,6]") + "}", "abcdef"),
       "tensor \"b\" (bytes [5, 6)) leaves a hole: bytes [4, 5) of the data buffer belong to no tensor"},
      {"bytes after the last tensor", file_bytes("{\"a\":" + f32x1 + "}", "abcdef"),
       "bytes [4, 6) at the end of the data buffer belong to no tensor"},
      {"non-string metadata", file_bytes("{\"__metadata__\":{\"k\":1}}"),
       "__metadata__ value of \"k\" is the number 1, not a string"},
      {"metadata not an object", file_bytes("{\"__metadata__\":[\"k\"]}"),
       "__metadata__ is an array, not an object of strings"},
      {"a name twice", file_bytes("{\"a\":" + f32x1 + ",\"a\":" + f32x1 + "}", "abcd"), "the header names \"a\" twice"},
      {"a key twice",
       file_bytes("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd"),
       "tensor \"a\": key \"dtype\" appears twice"},
      {"nested too deeply", file_bytes("{\"a\":" + entry("\"F32\"", "[[1]]", "[0,4]") + "}", "abcd"),
       "tensor \"a\": a value is nested deeper than the format allows"},
      {"bool byte not 0 or 1",
       file_bytes("{\"a\":" + entry("\"BOOL\"", "[2]", "[0,2]") + "}", std::string("\x01\x02", 2)),
       "tensor \"a\": BOOL element 1 is 2, not 0 or 1"},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string message = safetensors_error_of([&] { parse_safetensors(c.bytes, "bad.safetensors"); });
    EXPECT_EQ(message.rfind("bad.safetensors: ", 0), 0u) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
}

TEST(Safetensors, WriterRefusesWhatTheFormatCannotHold) {
  const at::Tensor t = at::ones({2}, at::kFloat);
  EXPECT_NE(safetensors_error_of([&] {
              encode_safetensors({{"a", t}, {"a", t}});
            }).find("tensor \"a\": the name appears twice"),
            std::string::npos);
  EXPECT_NE(safetensors_error_of([&] {
              encode_safetensors({{"__metadata__", t}});
            }).find("reserved for the metadata"),
            std::string::npos);
  EXPECT_NE(safetensors_error_of([&] {
              encode_safetensors({{"u", at::Tensor()}});
            }).find("tensor \"u\": the tensor is undefined"),
            std::string::npos);
  EXPECT_NE(safetensors_error_of([&] {
              encode_safetensors({{"c", at::ones({2}, at::kComplexFloat)}});
            }).find("tensor \"c\": dtype ComplexFloat cannot be saved"),
            std::string::npos);
  EXPECT_NE(safetensors_error_of([&] {
              encode_safetensors({{std::string("bad\xff"), t}});
            }).find("is not valid UTF-8"),
            std::string::npos);
  EXPECT_NE(safetensors_error_of([&] {
              encode_safetensors({}, {{"k", std::string("\xc3")}});
            }).find("is not valid UTF-8"),
            std::string::npos);
}

TEST(Safetensors, AFailedWriteLeavesTheOldFile) {
  TempDir dir;
  const std::string path = dir / "model.safetensors";
  const std::vector<NamedTensor> old_tensors = {{"old", at::arange(4, at::kFloat)}};
  write_safetensors(path, old_tensors);
  const std::string old_bytes = testing::read_text(path);

  // Refused before anything is written.
  const at::Tensor t = at::ones({2}, at::kFloat);
  const std::string message = safetensors_error_of([&] { write_safetensors(path, {{"a", t}, {"a", t}}); });
  EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
  EXPECT_EQ(testing::read_text(path), old_bytes);

  // A new file that cannot replace its target (a folder is in the way): the
  // folder stays, and no temporary file is left behind.
  const std::string folder = dir / "folder.safetensors";
  fs::create_directories(fs::path(folder) / "inside");
  EXPECT_EQ(safetensors_error_of([&] { write_safetensors(folder, old_tensors); }).rfind(folder + ": not written", 0),
            0u);
  EXPECT_TRUE(fs::is_directory(fs::path(folder) / "inside"));
  EXPECT_FALSE(atl::testing::temp_file_left(folder));

  // A successful write replaces the file whole.
  write_safetensors(path, {{"new", t}});
  const SafetensorsFile back = read_safetensors(path);
  ASSERT_EQ(back.tensors.size(), 1u);
  EXPECT_EQ(back.tensors[0].name, "new");
  EXPECT_FALSE(atl::testing::temp_file_left(path));
}

TEST(Safetensors, AWriteIntoAReadOnlyFolderLeavesTheOldFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes into read-only folders";
  TempDir dir;
  const std::string folder = dir / "locked";
  const std::string path = folder + "/model.safetensors";
  write_safetensors(path, {{"old", at::arange(4, at::kFloat)}});
  const std::string old_bytes = testing::read_text(path);
  ASSERT_EQ(::chmod(folder.c_str(), 0555), 0);
  const std::string message = safetensors_error_of([&] {
    write_safetensors(path, {{"new", at::ones({2}, at::kFloat)}});
  });
  ::chmod(folder.c_str(), 0755);
  EXPECT_EQ(message.rfind(path + ": not written", 0), 0u) << message;
  EXPECT_EQ(testing::read_text(path), old_bytes);
  EXPECT_FALSE(atl::testing::temp_file_left(path));
}

TEST(Safetensors, ReadingAMissingFileNamesIt) {
  TempDir dir;
  const std::string path = dir / "absent.safetensors";
  const std::string message = safetensors_error_of([&] { read_safetensors(path); });
  EXPECT_EQ(message.rfind(path + ": cannot read", 0), 0u) << message;
  // A truncated file names itself too.
  std::string bytes = encode_safetensors({{"w", at::ones({4}, at::kFloat)}});
  bytes.pop_back();
  const std::string cut = dir.write("cut.safetensors", bytes);
  const std::string cut_message = safetensors_error_of([&] { read_safetensors(cut); });
  EXPECT_EQ(cut_message.rfind(cut + ": tensor \"w\": data_offsets [0, 16] go past the end", 0), 0u) << cut_message;
}

}  // namespace
}  // namespace atl
