#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The one test command (README; CI runs it through .ci/run). On a fresh Debian 12 machine, as root:
#   1. scripts/setup.sh            install what is missing (idempotent)
#   2. build/        configure + build, ctest everything but the guests (unit, cli, abi, fuzz-replay: each
#                    fuzz target's corpus replayed by fuzz/replay.c, ...)
#   3. build-asan/   -DNK_SANITIZE=address,undefined, the same ctest
#                    (ctest -L/-LE take regexes: '^fuzz$' is libFuzzer's label, not fuzz-replay's)
#   4. build-tsan/   -DNK_SANITIZE=thread, the threaded unit tests
#      build-fuzz/   clang + -DNK_BUILD_FUZZ=ON, ctest -L fuzz (bounded runs from the seed corpora)
#   5. consumer      install build/ into a temporary prefix, build tests/consumer/ with pkg-config
#                    and with find_package(numakit)
#   6. guests        tests/vm/run-guests: every NUMA guest topology, every guest test
# Every step runs even when an earlier one failed (a failed build skips only its own tests).
# The last line reads "N passed, N failed, N skipped ..."; exit status 0 only if nothing failed.
# Environment: NK_TEST_JOBS (ctest -j, default: number of cpus), NK_TEST_SKIP (space-separated step
# names to leave out, e.g. "asan fuzz" for a quick local run; CI leaves nothing out).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
JOBS=${NK_TEST_JOBS:-$(nproc)}
SKIP=" ${NK_TEST_SKIP:-} "
T0=$(date +%s)

PASSED=0 FAILED=0 SKIPPED=0
SUMMARY=()

hdr() { printf '\n======== %s ========\n' "$*"; }
record() { # step status passed failed skipped seconds
    PASSED=$((PASSED + $3)); FAILED=$((FAILED + $4)); SKIPPED=$((SKIPPED + $5))
    SUMMARY+=("$(printf '%-9s %-6s %4d passed %3d failed %3d skipped %5d s' "$1" "$2" "$3" "$4" "$5" "$6")")
}
skipped_step() { [[ "$SKIP" == *" $1 "* ]]; }

# ctest_step NAME BUILDDIR CTEST-ARGS...: run ctest, count its results from the JUnit report.
ctest_step() {
    local name=$1 dir=$2 s rc counts
    shift 2
    s=${STEP_START:-$(date +%s)}   # the step's time includes its build
    STEP_START=
    rm -f "$dir/junit-$name.xml"
    ctest --test-dir "$dir" --output-on-failure -j "$JOBS" --output-junit "junit-$name.xml" "$@"
    rc=$?
    counts=$(python3 - "$dir/junit-$name.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
try:
    r = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 1 0"); sys.exit()
s = r if r.tag == "testsuite" else r.find("testsuite")
t, f, sk = (int(s.get(k, 0)) for k in ("tests", "failures", "skipped"))
d = int(s.get("disabled", 0))  # disabled cases (drivers run under other names) are not tests
print(t - f - sk - d, f, sk)
EOF
)
    # shellcheck disable=SC2086
    set -- $counts
    if [ "$rc" != 0 ] && [ "$2" = 0 ]; then set -- "$1" 1 "$3"; fi  # ctest failed without a failed case
    record "$name" "$([ "$2" = 0 ] && echo ok || echo FAIL)" "$1" "$2" "$3" $(( $(date +%s) - s ))
}

# build_step NAME DIR CMAKE-ARGS...: configure and build; records a failure (and returns 1) if it breaks.
build_step() {
    local name=$1 dir=$2 s
    shift 2
    s=$(date +%s)
    STEP_START=$s
    if cmake -S "$ROOT" -B "$dir" -G Ninja "$@" && ninja -C "$dir"; then
        return 0
    fi
    record "$name" FAIL 0 1 0 $(( $(date +%s) - s ))
    return 1
}

hdr "setup"
s=$(date +%s)
if bash scripts/setup.sh </dev/null; then
    record setup ok 1 0 0 $(( $(date +%s) - s ))
else
    record setup FAIL 0 1 0 $(( $(date +%s) - s ))
fi

hdr "build + tests (build/)"
if build_step build build; then
    ctest_step tests build -LE guest
    BUILD_OK=1
else
    BUILD_OK=0
fi

if skipped_step asan; then
    record asan skip 0 0 1 0
else
    hdr "sanitizers (build-asan/, address,undefined)"
    if build_step asan build-asan -DNK_SANITIZE=address,undefined -DNK_GUEST_TESTS=OFF; then
        ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
            ctest_step asan build-asan -LE '^(guest|fuzz)$'
    fi
fi

# ThreadSanitizer for the threaded code: arrays from many threads, concurrent
# nk_apply, next-touch faults from many threads, the multi-threaded bench, heaps used by many threads
# (test_heap: the heaps' own library, libnumakit_heap, built only with jemalloc; without it there is no
# test_heap target and unit.heap skips, so it is built only when the configured tree has it).
TSAN_TESTS="array_threads memory next_touch bench fgdls heap"
if skipped_step tsan; then
    record tsan skip 0 0 1 0
else
    hdr "thread sanitizer (build-tsan/: $TSAN_TESTS)"
    s=$(date +%s)
    if cmake -S "$ROOT" -B build-tsan -G Ninja -DNK_SANITIZE=thread -DNK_GUEST_TESTS=OFF &&
       ninja -C build-tsan $(for t in $TSAN_TESTS; do
           if [ "$t" != heap ] || ninja -C build-tsan -t targets all | grep -q '^test_heap:'; then
               printf 'test_%s ' "$t"; fi; done); then
        TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1} \
            ctest_step tsan build-tsan -R "^unit\.($(echo $TSAN_TESTS | tr ' ' '|'))\$"
    else
        record tsan FAIL 0 1 0 $(( $(date +%s) - s ))
    fi
fi

if skipped_step fuzz; then
    record fuzz skip 0 0 1 0
elif [ -f fuzz/CMakeLists.txt ]; then
    hdr "fuzz smoke (build-fuzz/, clang + libFuzzer)"
    if CC=clang build_step fuzz build-fuzz -DNK_BUILD_FUZZ=ON -DNK_GUEST_TESTS=OFF; then
        ctest_step fuzz build-fuzz -L '^fuzz$'
    fi
fi

hdr "install + consumer project"
s=$(date +%s)
if [ "$BUILD_OK" = 1 ] && bash tests/consumer/check.sh build; then
    record consumer ok 1 0 0 $(( $(date +%s) - s ))
else
    record consumer FAIL 0 1 0 $(( $(date +%s) - s ))
fi

if skipped_step guests; then
    record guests skip 0 0 1 0
else
    hdr "NUMA guests (tests/vm/run-guests)"
    s=$(date +%s)
    if [ "$BUILD_OK" = 1 ]; then
        python3 tests/vm/run-guests --build build 2>&1 | tee build/run-guests.log
        rc=${PIPESTATUS[0]}
        # "guests: G, wall time W s; tests: P passed, F failed, S skipped"
        line=$(grep -E '^guests: [0-9]+, wall time' build/run-guests.log | tail -n1)
        p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$line"); p=${p:-0}
        f=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line"); f=${f:-0}
        k=$(sed -nE 's/.* ([0-9]+) skipped.*/\1/p' <<<"$line"); k=${k:-0}
        if [ "$rc" = 77 ]; then
            # No vng/QEMU/kernel: setup.sh should have installed them; in CI that is a failure.
            if [ "${CI:-}" = true ]; then f=1; else k=1; fi
        elif [ "$rc" != 0 ] && [ "$f" = 0 ]; then
            f=1
        fi
        record guests "$([ "$f" = 0 ] && echo ok || echo FAIL)" "$p" "$f" "$k" $(( $(date +%s) - s ))
    else
        record guests FAIL 0 1 0 0
    fi
fi

T=$(( $(date +%s) - T0 ))
hdr "summary"
printf '%s\n' "${SUMMARY[@]}"
echo "test.sh: total wall time ${T} s"
echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
[ "$FAILED" = 0 ]
