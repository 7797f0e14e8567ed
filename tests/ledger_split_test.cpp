// The ledger's split of a worker's traffic: by direction per tag, by part
// of the message (values, indices, scales) and the peak within a sliding
// window of steps, as the run's end event reports them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "atoll/comm.h"
#include "atoll/train.h"
#include "compress/codec_names.h"
#include "tiny_data.h"

namespace atl {
namespace {

LedgerEntry entry(int64_t step, const std::string& tag, double sent, double received) {
  LedgerEntry e;
  e.step = step;
  e.tag = tag;
  e.payload_bytes = sent;
  e.sent_bytes = sent;
  e.received_bytes = received;
  return e;
}

TEST(LedgerSplit, PeakIsTheMostBytesSentWithinAnyWindowOfConsecutiveSteps) {
  Ledger l;
  // Bytes sent per step: 0: 10, 2: 30 (two ops), 3: 5, 5: 40; steps 1 and 4 send nothing.
  for (const LedgerEntry& e :
       {entry(0, "a", 10, 0), entry(2, "a", 20, 0), entry(2, "b", 10, 0), entry(3, "a", 5, 0), entry(5, "b", 40, 0)})
    l.record(e);
  EXPECT_DOUBLE_EQ(l.peak_sent(1), 40);  // step 5
  EXPECT_DOUBLE_EQ(l.peak_sent(2), 40);  // steps 2-3 hold 35, steps 4-5 hold 40
  EXPECT_DOUBLE_EQ(l.peak_sent(3), 45);  // steps 3-5
  EXPECT_DOUBLE_EQ(l.peak_sent(6), 85);  // everything
  EXPECT_DOUBLE_EQ(Ledger().peak_sent(4), 0);
  EXPECT_THROW(l.peak_sent(0), std::invalid_argument);
}

TEST(LedgerSplit, ReceivedBytesAreKeptPerTagNextToSentBytes) {
  Ledger l;
  l.record(entry(0, "sparse", 8, 24));
  l.record(entry(1, "sparse", 8, 20));
  l.record(entry(1, "params", 100, 100));
  EXPECT_DOUBLE_EQ(l.sent_by_tag().at("sparse"), 16);
  EXPECT_DOUBLE_EQ(l.received_by_tag().at("sparse"), 44);
  EXPECT_DOUBLE_EQ(l.received_by_tag().at("params"), 100);
}

TEST(LedgerSplit, DescribedEntriesSplitTheirSentBytesByTheMessagesParts) {
  Ledger l;
  l.record(entry(0, "plain", 100, 100));
  const int64_t first = l.ops();
  l.record(entry(1, "sparse", 60, 180));
  l.record(entry(2, "sparse", 30, 90));
  // A message of 10 bytes of values, 4 of indices and 1 of scales.
  l.describe_payload(first, BytesByPart{10, 4, 1});
  const BytesByPart p = l.sent_by_part();
  EXPECT_DOUBLE_EQ(p.indices, 90 * 4.0 / 15);
  EXPECT_DOUBLE_EQ(p.scales, 90 * 1.0 / 15);
  EXPECT_DOUBLE_EQ(p.values, 100 + 90 * 10.0 / 15);
  EXPECT_NEAR(p.total(), l.total_sent(), 1e-9);
  const auto shares = l.part_shares_by_tag();
  ASSERT_EQ(shares.size(), 1u);  // "plain" carries values only
  EXPECT_NEAR(shares.at("sparse").indices, 4.0 / 15, 1e-15);
  EXPECT_NEAR(shares.at("sparse").scales, 1.0 / 15, 1e-15);
}

nlohmann::json end_event(const Config& cfg) {
  const RunSummary s = simulate(cfg);
  return nlohmann::json::parse(s.events.back());
}

TEST(LedgerSplit, SparseLoCosTrafficSplitsIntoValuesIndicesAndScalesAsTheCodecTableSays) {
  Config cfg = tiny_config("sparseloco", 3);
  cfg.codec.chunk = 64;
  cfg.codec.chunk_topk = 4;
  cfg.codec.topk_scope = "global";  // one segment: the split is the table's for the whole payload
  const RunSummary run = simulate(cfg);
  const nlohmann::json e = nlohmann::json::parse(run.events.back());
  const nlohmann::json& parts = e.at("bytes_sent_by_part_per_worker");
  const double values = parts.at("values"), indices = parts.at("indices"), scales = parts.at("scales");
  EXPECT_NEAR(values + indices + scales, e.at("bytes_sent_per_worker").get<double>(), 1e-6);
  const int64_t n = run.params;
  CodecSizing sizing;
  sizing.chunk = 64;
  sizing.chunk_topk = 4;
  const CodecBytes want = codec_encoded_parts("topk-chunk-2bit", n, sizing);
  ASSERT_GT(indices, 0);
  ASSERT_GT(scales, 0);
  EXPECT_NEAR(indices / values, want.indices / want.values, 1e-9);
  EXPECT_NEAR(scales / values, want.scales / want.values, 1e-9);
  // Received: every other worker's message through the all-gather.
  EXPECT_NEAR(e.at("bytes_received_by_tag_total").at("pseudo-grad").get<double>(),
              e.at("bytes_sent_by_tag_total").at("pseudo-grad").get<double>(), 1e-6);
  // DiLoCo in fp32 sends values only.
  const nlohmann::json d = end_event(tiny_config("diloco", 3));
  EXPECT_EQ(d.at("bytes_sent_by_part_per_worker").at("indices").get<double>(), 0);
  EXPECT_EQ(d.at("bytes_sent_by_part_per_worker").at("scales").get<double>(), 0);
}

TEST(LedgerSplit, StreamingsPeakStepSendsOneFragmentWhereDiLoCosSendsTheWholeModel) {
  Config diloco = tiny_config("diloco", 2);
  diloco.model.n_layer = 2;
  diloco.diloco.inner_steps = 6;
  diloco.train.steps = 24;
  Config streaming = diloco;
  streaming.strategy.name = "streaming";
  streaming.streaming.fragment_blocks = 1;  // F = 2 fragments, one syncing every 3 steps
  streaming.streaming.overlap = 0;
  streaming.streaming.codec = "fp32";
  const nlohmann::json d = end_event(diloco), s = end_event(streaming);
  const double d_peak = d.at("peak_sent_bytes_per_worker"), s_peak = s.at("peak_sent_bytes_per_worker");
  // DiLoCo's busiest step is one of its 4 equal syncs.
  EXPECT_DOUBLE_EQ(d_peak, d.at("bytes_sent_per_worker").get<double>() / 4);
  // Streaming's is its larger fragment: less than the model, at least half of it.
  EXPECT_LT(s_peak, 0.8 * d_peak);
  EXPECT_GE(s_peak, 0.5 * d_peak);
  EXPECT_GT(s.at("peak_bandwidth_per_worker").get<double>(), 0);
  // Over a window of H steps both send the whole model once.
  diloco.run.peak_window_steps = streaming.run.peak_window_steps = 6;
  EXPECT_DOUBLE_EQ(end_event(diloco).at("peak_sent_bytes_per_worker").get<double>(), d_peak);
  EXPECT_NEAR(end_event(streaming).at("peak_sent_bytes_per_worker").get<double>(), d_peak, 1e-6 * d_peak);
}

}  // namespace
}  // namespace atl
