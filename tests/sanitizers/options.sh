# Sanitizer runtime options for the atoll tests (sourced by scripts/sanitize;
# `source tests/sanitizers/options.sh` to run build-asan/ or build-tsan/
# binaries by hand). Child processes (the `atoll` CLI the tests start, the
# Gloo ranks) inherit them. Every option is explained in docs/RELIABILITY.md.
_atoll_san_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# ASan: stop at the first error; also check initialisation order and
# use-after-return on the stack. Leaks are detected (LSAN_OPTIONS below).
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1${ATOLL_EXTRA_ASAN_OPTIONS:+:$ATOLL_EXTRA_ASAN_OPTIONS}"
# LSan: leaks whose allocation stack passes through a suppressed third-party
# library are ignored (lsan.supp); leaks in our code still fail the test.
export LSAN_OPTIONS="suppressions=$_atoll_san_dir/lsan.supp:print_suppressions=0"
# UBSan: every report is fatal (the code is also built with
# -fno-sanitize-recover=undefined) and prints a stack.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$_atoll_san_dir/ubsan.supp"
# TSan: reports whose stack is inside an uninstrumented third-party library
# are suppressed (tsan.supp); a race in our code fails the test (exitcode 66).
export TSAN_OPTIONS="halt_on_error=0:exitcode=66:second_deadlock_stack=1:suppressions=$_atoll_san_dir/tsan.supp:print_suppressions=0"
unset _atoll_san_dir
