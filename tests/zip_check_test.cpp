// The archive check before LibTorch reads a TorchScript file
// (src/model/zip_check.cpp), on zip files built here byte by byte.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/zip_check.h"

namespace atl {
namespace {

uint32_t crc32_of(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// A stored (uncompressed) entry.
struct Stored {
  std::string name, data;
};

// Its local header, name and data.
std::string local(const Stored& e) {
  std::string out;
  put(out, 0x04034b50, 4);
  put(out, 20, 2);  // version needed
  put(out, 0, 2);   // flags
  put(out, 0, 2);   // method: stored
  put(out, 0, 4);   // time, date
  put(out, crc32_of(e.data), 4);
  put(out, e.data.size(), 4);
  put(out, e.data.size(), 4);
  put(out, e.name.size(), 2);
  put(out, 0, 2);  // extra length
  return out + e.name + e.data;
}

// Its central directory entry, pointing at a local header at `offset`.
std::string central(const Stored& e, uint64_t offset) {
  std::string out;
  put(out, 0x02014b50, 4);
  put(out, 20, 2);  // version made by
  put(out, 20, 2);  // version needed
  put(out, 0, 2);   // flags
  put(out, 0, 2);   // method
  put(out, 0, 4);   // time, date
  put(out, crc32_of(e.data), 4);
  put(out, e.data.size(), 4);
  put(out, e.data.size(), 4);
  put(out, e.name.size(), 2);
  put(out, 0, 2);  // extra
  put(out, 0, 2);  // comment
  put(out, 0, 2);  // disk
  put(out, 0, 2);  // internal attributes
  put(out, 0, 4);  // external attributes
  put(out, offset, 4);
  return out + e.name;
}

// `body` (local records) followed by `directory` (central entries, `count` of them).
std::string archive(const std::string& body, const std::string& directory, uint64_t count) {
  std::string out = body + directory;
  put(out, 0x06054b50, 4);
  put(out, 0, 4);  // disks
  put(out, count, 2);
  put(out, count, 2);
  put(out, directory.size(), 4);
  put(out, body.size(), 4);
  put(out, 0, 2);  // comment
  return out;
}

std::string zip_error_of(const std::string& bytes) {
  try {
    check_zip_archive(bytes, "m.pt");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<accepted>";
}

TEST(ZipCheck, EntriesThatShareBytesAreRefusedBeforeAnyIsInflated) {
  const Stored pkl{"m/data.pkl", std::string(100, 'p')}, code{"m/code/m.py", "def f(): pass\n"};
  const std::string body = local(pkl) + local(code);
  const uint64_t at_code = local(pkl).size();  // 140
  EXPECT_EQ(check_zip_archive(archive(body, central(pkl, 0) + central(code, at_code), 2), "m.pt"), 2);
  // The directory's order need not be the file's.
  EXPECT_EQ(check_zip_archive(archive(body, central(code, at_code) + central(pkl, 0), 2), "m.pt"), 2);

  // Several directory entries naming one local header: the check inflated
  // (and CRC-checked) the same bytes once per entry, so a few KB of
  // directory made it, and then LibTorch, inflate one entry thousands of times.
  std::string many = central(pkl, 0) + central(code, at_code);
  for (int i = 0; i < 3; ++i) many += central(pkl, 0);
  const std::string shared = zip_error_of(archive(body, many, 5));
  EXPECT_EQ(shared,
            "m.pt: not an intact zip archive (entry 'm/data.pkl' (bytes 0 to 140) overlaps entry 'm/data.pkl' "
            "at byte 0; entries must not share bytes)");

  // An entry hidden inside another's data, each with an intact CRC-32.
  const Stored outer{"m/outer", "xx" + local(code) + "yy"};
  const uint64_t inner = 30 + outer.name.size() + 2;
  const std::string nested = zip_error_of(archive(local(outer), central(outer, 0) + central(code, inner), 2));
  EXPECT_NE(nested.find("entry 'm/outer' (bytes 0 to 96) overlaps entry 'm/code/m.py' at byte 39"), std::string::npos)
      << nested;

  // The last entry running into the central directory.
  Stored longer = code;
  longer.data += "more";
  std::string into_directory = archive(local(pkl) + local(code), central(pkl, 0) + central(longer, at_code), 2);
  EXPECT_NE(zip_error_of(into_directory).find("overlaps the central directory at byte 195"), std::string::npos)
      << zip_error_of(into_directory);
}

}  // namespace
}  // namespace atl
