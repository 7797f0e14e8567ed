// A check shared by the codec tests of codecs that need error feedback
// (2bit, sign): through the payload path with codec.error_feedback on, the
// second payload carries what the first one lost; with it off, every
// payload decodes as the codec alone does.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>

#include "atoll/config.h"
#include "compress/payload.h"

namespace atl {

// `want`: the codec's own decoding of x with codec.block = `block`.
inline void expect_payload_path_carries_the_loss(const std::string& codec_name, int64_t block, const at::Tensor& x,
                                                 const at::Tensor& want) {
  CodecConfig cfg;
  cfg.block = block;
  ASSERT_TRUE(cfg.error_feedback);
  PayloadCodec codec(codec_name, cfg);
  at::Tensor first = x.clone(), second = x.clone();
  codec.encode(first);
  codec.encode(second);
  EXPECT_TRUE(at::equal(first, want)) << codec_name;
  EXPECT_FALSE(at::equal(second, want)) << codec_name
                                        << ": the residual of the first payload was not added to the second";
  cfg.error_feedback = false;
  PayloadCodec plain(codec_name, cfg);
  at::Tensor again = x.clone();
  plain.encode(again);
  plain.encode(again = x.clone());
  EXPECT_TRUE(at::equal(again, want)) << codec_name;
}

}  // namespace atl
