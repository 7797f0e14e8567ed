// The job secret of a real run: every rank holds the same random token, and
// the rendezvous admits only processes that prove they hold it (see
// auth_store.h). `atoll token new FILE` makes one; the ranks read it from
// ATOLL_JOB_TOKEN_FILE (a file only its owner can read) or ATOLL_JOB_TOKEN
// (its hex text; `atoll launch` passes a fresh one to a one-host job).
//
// Thread-safety: functions only.
#pragma once

#include <string>

#include "util/crypto.h"

namespace atl {

constexpr size_t kJobTokenBytes = 32;       // what `atoll token new` makes (256 bits)
constexpr size_t kMaxJobTokenBytes = 1024;  // a longer "token" is a wrong file

// A fresh token's text: kJobTokenBytes random bytes as hex, and a newline.
std::string new_job_token_text();
// write_new_job_token(path) (`atoll token new`) is declared in atoll/dist.h.

// A token's hex text (surrounding white space allowed) as bytes; throws
// std::invalid_argument naming `source` if it is not 64..2048 hex digits.
Bytes parse_job_token(const std::string& text, const std::string& source);
// Reads a token file; throws naming the path if it cannot be read, holds no
// token, or can be read by group or others ("chmod 600 <path>").
Bytes read_job_token_file(const std::string& path);

// True for an address that cannot leave this host: 127.0.0.0/8, ::1,
// "localhost".
bool is_loopback_address(const std::string& host);

}  // namespace atl
