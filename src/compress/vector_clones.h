// ATOLL_VECTOR_CLONES: build a function twice, for AVX2 and for the baseline,
// and pick one at load time. The codecs' element loops are written so the
// compiler vectorises them; without the AVX2 copy a default x86-64 build
// would use 128-bit SSE2 only. GCC and Clang both have the vector types the
// loops use; only GCC on x86-64 gets the clones.
#pragma once

//
// Not under ThreadSanitizer: the clones are picked by an IFUNC resolver that
// the dynamic loader runs before TSan's runtime exists, and the resolver's
// instrumented code then crashes the program at load (seen in CI's TSan
// build once magnitude_select.cpp's clones were linked in).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define ATOLL_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ATOLL_VECTOR_CLONES
#endif
