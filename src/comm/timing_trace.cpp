// A worker's clock record: encoding, step repeats and the checked reader
// (format in timing_trace.h).
#include "comm/timing_trace.h"

#include <cmath>
#include <cstring>

#include "atoll/state.h"

namespace atl {
namespace {

constexpr char kTraceMagic[8] = {'A', 'T', 'L', 'T', 'I', 'M', 'E', '1'};
// Limits a well-formed file never reaches; a corrupt length past them is refused.
constexpr uint64_t kMaxList = uint64_t(1) << 24;
constexpr uint64_t kMaxRepeats = uint64_t(1) << 40;  // also bounds the steps of the whole trace
constexpr uint64_t kTraceMaxRank = uint64_t(1) << 20;
constexpr uint64_t kMaxValue = uint64_t(1) << 48;  // element counts, wait distances

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
// Doubles as their IEEE bits, little-endian like every other field.
void put_f64(std::string& out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  put_u64(out, bits);
}

// Reads the encoding back; every read checks the bytes are there.
class Cursor {
 public:
  Cursor(const char* data, size_t size, const std::string& where) : p_(data), end_(data + size), where_(where) {}
  bool done() const { return p_ == end_; }
  uint64_t left() const { return uint64_t(end_ - p_); }
  uint8_t byte(const char* what) {
    need(1, what);
    return static_cast<uint8_t>(*p_++);
  }
  uint64_t varint(const char* what) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = byte(what);
      v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail(std::string(what) + " is not a valid varint");
  }
  double f64(const char* what) {
    const uint64_t bits = u64(what);
    double v;
    std::memcpy(&v, &bits, 8);
    return v;
  }
  uint64_t u64(const char* what) {
    need(8, what);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<uint8_t>(p_[i])) << (8 * i);
    p_ += 8;
    return v;
  }
  std::string bytes(uint64_t n, const char* what) {
    need(n, what);
    std::string s(p_, size_t(n));
    p_ += n;
    return s;
  }
  [[noreturn]] void fail(const std::string& why) const { throw TraceError(where_ + ": " + why); }

 private:
  void need(uint64_t n, const char* what) const {
    if (uint64_t(end_ - p_) < n) fail(std::string("truncated: ") + what + " is cut off");
  }
  const char* p_;
  const char* end_;
  std::string where_;
};

// A field read back must be in its range: a corrupt value is refused, never cut down.
uint64_t bounded(const Cursor& in, uint64_t v, uint64_t limit, const char* what) {
  if (v > limit)
    in.fail(std::string(what) + " " + std::to_string(v) + " is implausible (at most " + std::to_string(limit) + ")");
  return v;
}

void encode_record(std::string& out, const TraceRecord& r) {
  out.push_back(static_cast<char>(r.kind));
  switch (r.kind) {
    case TraceRecord::Kind::Step:
      break;
    case TraceRecord::Kind::Compute:
      put_f64(out, r.seconds);
      break;
    case TraceRecord::Kind::Wait:
      put_varint(out, uint64_t(r.waits_back));
      break;
    case TraceRecord::Kind::Call:
      out.push_back(static_cast<char>(r.call.op));
      out.push_back(static_cast<char>(r.call.channel));
      put_f64(out, r.call.bytes);
      put_varint(out, uint64_t(r.call.rank));
      put_varint(out, r.call.list.size());
      for (int64_t v : r.call.list) put_varint(out, uint64_t(v));
      put_varint(out, r.call.tag.size());
      out += r.call.tag;
      break;
  }
}

// One record; checks every field's range.
TraceRecord decode_record(Cursor& in) {
  TraceRecord r;
  const uint8_t kind = in.byte("a record kind");
  switch (kind) {
    case 'S':
      r.kind = TraceRecord::Kind::Step;
      break;
    case 'C':
      r.kind = TraceRecord::Kind::Compute;
      r.seconds = in.f64("a compute time");
      if (!(r.seconds >= 0) || !std::isfinite(r.seconds)) in.fail("a compute time is negative or not finite");
      break;
    case 'W':
      r.kind = TraceRecord::Kind::Wait;
      r.waits_back = int64_t(bounded(in, in.varint("a wait"), kMaxValue, "a wait's distance"));
      break;
    case 'O': {
      r.kind = TraceRecord::Kind::Call;
      const uint8_t op = in.byte("a call's op");
      if (op < 1 || op > kLastTracedOp) in.fail("unknown call op " + std::to_string(op));
      r.call.op = static_cast<TracedOp>(op);
      r.call.channel = in.byte("a call's channel");
      if (r.call.channel > 1) in.fail("call channel " + std::to_string(r.call.channel) + " (0 or 1 allowed)");
      r.call.bytes = in.f64("a call's bytes");
      if (!(r.call.bytes >= 0) || !std::isfinite(r.call.bytes))
        in.fail("a call's byte count is negative or not finite");
      r.call.rank = int64_t(bounded(in, in.varint("a call's rank"), kTraceMaxRank, "a call's rank"));
      const uint64_t n = in.varint("a call's list length");
      // Each entry takes at least a byte: a longer list cannot be there, and
      // is refused before the reserve below allocates room for it.
      if (n > kMaxList || n > in.left()) in.fail("a call's list of " + std::to_string(n) + " entries is implausible");
      r.call.list.reserve(size_t(n));
      for (uint64_t i = 0; i < n; ++i)
        r.call.list.push_back(int64_t(bounded(in, in.varint("a call's list"), kMaxValue, "a call's list entry")));
      const uint64_t tag = in.varint("a call's tag length");
      if (tag > 256) in.fail("a call's tag of " + std::to_string(tag) + " bytes is implausible");
      r.call.tag = in.bytes(tag, "a call's tag");
      break;
    }
    default:
      in.fail("unknown record kind " + std::to_string(kind));
  }
  return r;
}

}  // namespace

bool is_async(TracedOp op) { return op == TracedOp::AllReduceAsync || op == TracedOp::ExchangeWithAsync; }

void TimingTrace::close_block() {
  if (current_.empty()) return;
  if (!blocks_.empty() && blocks_.back().bytes == current_) {
    ++blocks_.back().repeats;
  } else {
    blocks_.push_back({current_, 1});
  }
  current_.clear();
}

void TimingTrace::step() {
  close_block();
  TraceRecord r;
  r.kind = TraceRecord::Kind::Step;
  encode_record(current_, r);
}

void TimingTrace::compute(double seconds) {
  TraceRecord r;
  r.kind = TraceRecord::Kind::Compute;
  r.seconds = seconds;
  encode_record(current_, r);
}

int64_t TimingTrace::call(const TracedCall& c) {
  // The reader's limit: a longer tag would make a trace its own run cannot read back.
  if (c.tag.size() > 256)
    throw std::logic_error("timing trace: tag '" + c.tag.substr(0, 40) + "...' is over 256 bytes");
  TraceRecord r;
  r.kind = TraceRecord::Kind::Call;
  r.call = c;
  encode_record(current_, r);
  return is_async(c.op) ? async_issued_++ : -1;
}

void TimingTrace::wait(int64_t async_id) {
  if (async_id < 0) return;
  TraceRecord r;
  r.kind = TraceRecord::Kind::Wait;
  r.waits_back = async_issued_ - 1 - async_id;
  encode_record(current_, r);
}

void TimingTrace::for_each(const std::function<void(const TraceRecord&)>& fn) const {
  auto run = [&](const std::string& bytes, int64_t repeats) {
    std::vector<TraceRecord> records;
    Cursor in(bytes.data(), bytes.size(), "timing trace");
    while (!in.done()) records.push_back(decode_record(in));
    for (int64_t k = 0; k < repeats; ++k)
      for (const auto& r : records) fn(r);
  };
  for (const auto& b : blocks_) run(b.bytes, b.repeats);
  run(current_, 1);
}

int64_t TimingTrace::steps() const {
  // A step record can only open a block, so counting needs no walk of the repeats.
  int64_t n = 0;
  for (const auto& b : blocks_) n += b.bytes[0] == 'S' ? b.repeats : 0;
  return n + (!current_.empty() && current_[0] == 'S' ? 1 : 0);
}

size_t TimingTrace::stored_bytes() const { return encode(0).size(); }

std::string TimingTrace::encode(int64_t rank) const {
  std::string out(kTraceMagic, 8);
  put_u64(out, uint64_t(rank));
  // The open step counts as a repeat of an equal last block, so a trace
  // saved mid-run encodes as the uninterrupted run's does.
  const bool folds = !current_.empty() && !blocks_.empty() && blocks_.back().bytes == current_;
  const bool extra = !current_.empty() && !folds;
  put_u64(out, blocks_.size() + (extra ? 1 : 0));
  auto block = [&](const std::string& bytes, int64_t repeats) {
    put_varint(out, uint64_t(repeats));
    put_varint(out, bytes.size());
    out += bytes;
  };
  for (size_t i = 0; i < blocks_.size(); ++i)
    block(blocks_[i].bytes, blocks_[i].repeats + (folds && i + 1 == blocks_.size() ? 1 : 0));
  if (extra) block(current_, 1);
  return out;
}

TimingTrace TimingTrace::decode(const std::string& bytes, const std::string& where, int64_t* rank) {
  Cursor in(bytes.data(), bytes.size(), where);
  if (in.bytes(8, "the magic") != std::string(kTraceMagic, 8))
    in.fail("not an atoll timing trace (the file does not start with ATLTIME1)");
  const uint64_t saved_rank = in.u64("the rank");
  if (saved_rank > kTraceMaxRank) in.fail("rank " + std::to_string(saved_rank) + " is implausible");
  if (rank != nullptr) *rank = int64_t(saved_rank);
  const uint64_t count = in.u64("the block count");
  // A block takes at least 3 bytes (a repeat count, a length, a record).
  if (count > in.left() / 3)
    in.fail("block count " + std::to_string(count) + " is more than the " + std::to_string(in.left()) +
            " bytes after the header can hold (at least 3 bytes per block)");
  TimingTrace t;
  uint64_t total = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t repeats = in.varint("a block's repeat count");
    if (repeats < 1 || repeats > kMaxRepeats)
      in.fail("a block's repeat count " + std::to_string(repeats) + " is out of range");
    total += repeats;
    if (total > kMaxRepeats) in.fail("the blocks repeat more than " + std::to_string(kMaxRepeats) + " times in all");
    Block b;
    b.repeats = int64_t(repeats);
    b.bytes = in.bytes(in.varint("a block's length"), "a block");
    if (b.bytes.empty()) in.fail("an empty block");
    // Only the first block (what happened before step 0) may start with
    // anything but a step: recording starts a block at each step.
    if (i > 0 && b.bytes[0] != 'S') in.fail("block " + std::to_string(i) + " does not begin with a step");
    // Check every record now, so reading it later cannot fail.
    Cursor records(b.bytes.data(), b.bytes.size(), where);
    bool first = true;
    while (!records.done()) {
      const TraceRecord r = decode_record(records);
      if (r.kind == TraceRecord::Kind::Step && !first) in.fail("a step record inside a block");
      if (r.kind == TraceRecord::Kind::Call && is_async(r.call.op)) t.async_issued_ += b.repeats;
      first = false;
    }
    t.blocks_.push_back(std::move(b));
  }
  if (!in.done()) in.fail("unexpected bytes after the last block");
  return t;
}

void TimingTrace::visit_state(StateVisitor& v) {
  std::string bytes = v.loading() ? std::string() : encode(0);
  v.text("timing_trace", bytes);
  if (v.loading()) *this = decode(bytes, "the checkpoint's timing trace");
}

}  // namespace atl
