// Checks a zip archive's entries against their CRC-32 before LibTorch reads
// it. LibTorch 1.13's TorchScript loader does not: fuzz_torchscript found a
// 2 KB module file whose damaged (deflated) code made torch::jit::load
// allocate about 20 GB before it failed. A file whose every entry checks out
// is one a writer made, not a damaged copy.
//
// The zip format (PKWARE APPNOTE): an end-of-central-directory record at the
// end (zip64: a locator and a zip64 record before it) points at the central
// directory; each of its entries gives the method, CRC-32, sizes and the
// offset of a local header, after which the entry's data follow. Entries
// are decompressed in 64 KiB pieces, never held whole, and each once: the
// entries must not overlap one another or the central directory.
#include "model/zip_check.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace atl {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw std::runtime_error(source + ": not an intact zip archive (" + what + ")");
}

uint64_t zip_le(const std::string& b, uint64_t at, int bytes, const std::string& source) {
  if (at > b.size() || uint64_t(bytes) > b.size() - at) fail(source, "a record runs past the end of the file");
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(b[size_t(at) + size_t(i)]);
  return v;
}

struct Directory {
  uint64_t entries = 0, offset = 0, size = 0;
};

// The central directory as the end record describes it. Its counts must
// agree: a reader trusting one count and another reader the other would
// see different archives (the fuzzer set one to 0, which skipped the
// checks below while LibTorch read every entry).
Directory find_directory(const std::string& b, const std::string& source) {
  if (b.size() < 22) fail(source, "too short");
  // The end record is 22 bytes plus a comment of up to 65535.
  const size_t lowest = b.size() > 22 + 65535 ? b.size() - 22 - 65535 : 0;
  for (size_t at = b.size() - 22 + 1; at-- > lowest;) {
    if (zip_le(b, at, 4, source) != 0x06054b50) continue;
    uint64_t here = zip_le(b, at + 8, 2, source), total = zip_le(b, at + 10, 2, source);
    Directory d{total, zip_le(b, at + 16, 4, source), zip_le(b, at + 12, 4, source)};
    if (here == 0xffff || total == 0xffff || d.offset == 0xffffffff || d.size == 0xffffffff) {  // zip64
      if (at < 20 || zip_le(b, at - 20, 4, source) != 0x07064b50) fail(source, "zip64 locator missing");
      const uint64_t record = zip_le(b, at - 20 + 8, 8, source);
      if (zip_le(b, record, 4, source) != 0x06064b50) fail(source, "zip64 end record missing");
      here = zip_le(b, record + 24, 8, source);
      total = zip_le(b, record + 32, 8, source);
      d = {total, zip_le(b, record + 48, 8, source), zip_le(b, record + 40, 8, source)};
    }
    if (here != total) fail(source, "the end record's entry counts disagree");
    if (d.offset > b.size() || d.size > b.size() - d.offset) fail(source, "the central directory runs past the end");
    return d;
  }
  fail(source, "no end-of-central-directory record");
}

// CRC-32 of an entry's data, decompressing deflate in pieces; checks the size.
uint32_t entry_crc(const std::string& b, uint64_t data, uint64_t compressed, uint64_t size, int method,
                   const std::string& name, const std::string& source) {
  if (data > b.size() || compressed > b.size() - data) fail(source, "entry '" + name + "' runs past the end");
  const auto* in = reinterpret_cast<const Bytef*>(b.data() + data);
  if (method == 0) {
    if (compressed != size) fail(source, "stored entry '" + name + "' has two sizes");
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t done = 0; done < size;) {
      const uInt n = static_cast<uInt>(std::min<uint64_t>(size - done, 1u << 30));
      crc = crc32(crc, in + done, n);
      done += n;
    }
    return static_cast<uint32_t>(crc);
  }
  if (method != 8) fail(source, "entry '" + name + "' uses compression method " + std::to_string(method));
  z_stream z;
  std::memset(&z, 0, sizeof z);
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail(source, "zlib cannot start");
  uLong crc = crc32(0L, Z_NULL, 0);
  uint64_t produced = 0, consumed = 0;
  unsigned char out[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.avail_in == 0) {
      const uInt n = static_cast<uInt>(std::min<uint64_t>(compressed - consumed, 1u << 30));
      z.next_in = const_cast<Bytef*>(in + consumed);
      z.avail_in = n;
      consumed += n;
    }
    z.next_out = out;
    z.avail_out = sizeof out;
    rc = inflate(&z, Z_NO_FLUSH);
    const uint64_t got = sizeof out - z.avail_out;
    produced += got;
    crc = crc32(crc, out, static_cast<uInt>(got));
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    if (produced > size) break;
    if (z.avail_in == 0 && consumed == compressed && rc != Z_STREAM_END && got == 0) break;
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != size)
    fail(source, "entry '" + name + "' does not decompress to its " + std::to_string(size) + " bytes");
  return static_cast<uint32_t>(crc);
}

}  // namespace

int64_t check_zip_archive(const std::string& b, const std::string& source) {
  const Directory dir = find_directory(b, source);
  struct Entry {
    std::string name;
    int method = 0;
    uint32_t crc = 0;
    uint64_t compressed = 0, size = 0, local = 0, data = 0;
  };
  std::vector<Entry> entries;
  uint64_t at = dir.offset;
  // Every entry the directory holds, by its size, and as many as it counts.
  while (at < dir.offset + dir.size) {
    const std::string k = std::to_string(entries.size());
    if (zip_le(b, at, 4, source) != 0x02014b50) fail(source, "central directory entry " + k + " is damaged");
    Entry e;
    e.method = int(zip_le(b, at + 10, 2, source));
    e.crc = uint32_t(zip_le(b, at + 16, 4, source));
    e.compressed = zip_le(b, at + 20, 4, source);
    e.size = zip_le(b, at + 24, 4, source);
    const uint64_t name_len = zip_le(b, at + 28, 2, source), extra_len = zip_le(b, at + 30, 2, source),
                   comment_len = zip_le(b, at + 32, 2, source);
    e.local = zip_le(b, at + 42, 4, source);
    if (at + 46 + name_len > b.size()) fail(source, "a name runs past the end");
    e.name = b.substr(size_t(at + 46), size_t(name_len));
    // zip64: the 0xffffffff fields follow in the extra field 0x0001, in order.
    for (uint64_t x = at + 46 + name_len, end = x + extra_len; x + 4 <= end;) {
      const uint64_t id = zip_le(b, x, 2, source), len = zip_le(b, x + 2, 2, source);
      if (id == 1) {
        uint64_t f = x + 4;
        if (e.size == 0xffffffff) e.size = zip_le(b, f, 8, source), f += 8;
        if (e.compressed == 0xffffffff) e.compressed = zip_le(b, f, 8, source), f += 8;
        if (e.local == 0xffffffff) e.local = zip_le(b, f, 8, source);
      }
      x += 4 + len;
    }
    if (zip_le(b, e.local, 4, source) != 0x04034b50) fail(source, "the local header of '" + e.name + "' is damaged");
    e.data = e.local + 30 + zip_le(b, e.local + 26, 2, source) + zip_le(b, e.local + 28, 2, source);
    if (e.data > b.size() || e.compressed > b.size() - e.data) fail(source, "entry '" + e.name + "' runs past the end");
    entries.push_back(std::move(e));
    at += 46 + name_len + extra_len + comment_len;
  }
  if (entries.size() != dir.entries || at != dir.offset + dir.size)
    fail(source, "the central directory holds " + std::to_string(entries.size()) + " entries, the end record says " +
                     std::to_string(dir.entries));
  // Each entry's local header and data, in file order, must end before the
  // next entry's header and the last before the central directory. Entries
  // that share bytes would each be inflated again (a few KB of directory
  // could make the check below, and LibTorch, inflate the same data
  // thousands of times), and no zip writer makes them.
  std::vector<const Entry*> order;
  for (const Entry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* x, const Entry* y) { return x->local < y->local; });
  for (size_t i = 0; i < order.size(); ++i) {
    const uint64_t end = order[i]->data + order[i]->compressed;
    const uint64_t next = i + 1 < order.size() ? order[i + 1]->local : dir.offset;
    if (end > next)
      fail(source, "entry '" + order[i]->name + "' (bytes " + std::to_string(order[i]->local) + " to " +
                       std::to_string(end) + ") overlaps " +
                       (i + 1 < order.size() ? "entry '" + order[i + 1]->name + "' at byte " + std::to_string(next)
                                             : "the central directory at byte " + std::to_string(next)) +
                       "; entries must not share bytes");
  }
  for (const Entry& e : entries)
    if (entry_crc(b, e.data, e.compressed, e.size, e.method, e.name, source) != e.crc)
      fail(source, "entry '" + e.name + "' fails its CRC-32: the file is damaged");
  return int64_t(dir.entries);
}

}  // namespace atl
