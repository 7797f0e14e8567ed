// The payload codecs' names: the one list that make_codec(), config
// validation, `atoll train --help` and the codec benchmark read. Torch-free
// (config and the fuzz build use it without LibTorch).
#pragma once

#include <string>
#include <vector>

#include "atoll/config.h"

namespace atl {

// Names accepted by make_codec (compress/codec.h), in the order help and
// errors list them.
const std::vector<std::string>& codec_names();

// "fp32 | fp16 | bf16 | int8 | fp4 (= fp4-e3m0) | fp4-e2m1 | topk": every
// codec, each shorthand with the name it stands for (help strings).
std::string codec_choices();
// The codecs that keep every entry's position (no topk), shorthands only:
// for payloads whose entries the receivers must already know (SPARTA's).
std::string dense_codec_choices();

// `key` names a codec ("diloco.codec = 'fp3': allowed values are ...").
void validate_codec_key(const std::string& key, const std::string& name, std::vector<std::string>& errors);
// codec.topk_scope's values: "tensor" (per tensor, the default) | "global".
const std::vector<std::string>& topk_scopes();
// The [codec] section: the knobs shared by every codec key.
void validate_codec_section(const CodecConfig& c, std::vector<std::string>& errors);

}  // namespace atl
