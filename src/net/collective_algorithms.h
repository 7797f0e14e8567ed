// The collective algorithm table: one line per all-reduce algorithm
// (network.algorithm) with its name, other accepted spellings, help line and
// its two formulas (ALGORITHMS.md 7.2). parse_algorithm(), to_string(),
// [network]'s check, `--help`, `atoll cost` and the network model read it,
// so adding an algorithm is an enum value (atoll/net.h) plus one line here.
// Torch-free (config and the fuzz build link it without LibTorch).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "atoll/net.h"

namespace atl {

// What an all-reduce's time depends on.
struct AllReduceShape {
  int64_t n = 1;                // ranks taking part (>= 2 when a formula is asked)
  double payload = 0;           // S: bytes per rank
  double alpha = 0;             // the largest participating latency (s)
  double beta = 1;              // the slowest participating uplink or downlink (bytes/s): min(up, down)
  double up = 1;                // the slowest participating uplink (bytes/s)
  double down = 1;              // the slowest participating downlink (bytes/s)
  double server_bandwidth = 0;  // network.server_bandwidth (<= 0: same as the workers')
};

struct CollectiveAlgorithm {
  CollectiveAlgo algo;
  const char* name;                  // network.algorithm's value; to_string()
  std::vector<std::string> aliases;  // other spellings parse_algorithm() accepts
  const char* help;                  // how the all-reduce runs (one line, --help)
  double (*all_reduce_seconds)(const AllReduceShape& shape);
  // Bytes one of n ranks sends and receives in an all-reduce of S bytes each.
  ByteCount (*all_reduce_bytes)(double n, double payload);
  // The same two for an all-gather (each rank's S reaches the n - 1 others).
  double (*all_gather_seconds)(const AllReduceShape& shape);
  ByteCount (*all_gather_bytes)(double n, double payload);
};

// Every algorithm, in the order help and errors list them.
const std::vector<CollectiveAlgorithm>& collective_algorithms();
// `algo`'s line.
const CollectiveAlgorithm& collective_algorithm(CollectiveAlgo algo);
// Every accepted spelling, names and aliases ([network]'s check).
std::vector<std::string> collective_algorithm_spellings();
// "ring: a ring ...; tree: ...; ps: ...": each name with its help line.
// (collective_algorithm_choices(), the names alone, is in atoll/net.h.)
std::string collective_algorithm_help();

}  // namespace atl
