#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# numakit cc: flags, link detection, compilers it refuses, errors.
# Usage: trace_cc.sh NUMAKIT CLANG RUNTIME_DIR
set -u
NK=$1 CLANG=$2 RTDIR=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
expect_rc() { # WANT DESCRIPTION CMD...
    local want=$1 what=$2 rc
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" = "$want" ] || { fail "$what: exit $rc, wanted $want"; cat "$T/out" "$T/err"; }
}

expect_rc 0 "--print-flags" "$NK" cc --print-flags
grep -q -- '-fsanitize-coverage=func,inline-bool-flag,trace-loads,trace-stores' "$T/out" || fail "--print-flags: coverage flag"
grep -q -- ' -g ' "$T/out" && grep -q -- '-fno-omit-frame-pointer' "$T/out" || fail "--print-flags: -g, frame pointers"
grep -q -- '-lnumakit_prof' "$T/out" && fail "--print-flags prints no library"

expect_rc 0 "--print-ldflags" "$NK" cc --print-ldflags
grep -q -- "-L$RTDIR " "$T/out" && grep -q -- "-Wl,-rpath,$RTDIR " "$T/out" && grep -q -- '-lnumakit_prof' "$T/out" \
    || fail "--print-ldflags: -L, rpath and -lnumakit_prof for $RTDIR: $(cat "$T/out")"

expect_rc 0 "both" "$NK" cc --print-flags --print-ldflags
[ "$(wc -l <"$T/out")" = 1 ] && grep -q -- '-fsanitize-coverage' "$T/out" && grep -q -- '-lnumakit_prof' "$T/out" \
    || fail "--print-flags --print-ldflags: one line with both"

# The flags are usable as printed, by hand, for a Makefile.
cat >"$T/p.c" <<'C'
#include <stdlib.h>
int main(void) { volatile long *a = malloc(1 << 20); for (int i = 0; i < 100; i++) a[i] = i; return (int)a[5] - 5; }
C
# shellcheck disable=SC2046
"$CLANG" -O1 $("$NK" cc --print-flags) -c "$T/p.c" -o "$T/p.o" || fail "compile with --print-flags"
# shellcheck disable=SC2046
"$CLANG" "$T/p.o" -o "$T/p" $("$NK" cc --print-ldflags) || fail "link with --print-ldflags"
"$T/p" || fail "the program built by hand runs"

# Through the command: -c compiles only (no runtime), linking adds it.
expect_rc 0 "cc -c" "$NK" cc "$CLANG" -O1 -c "$T/p.c" -o "$T/q.o"
nm "$T/q.o" | grep -q '__sanitizer_cov_store8' || fail "cc -c: the object calls __sanitizer_cov_store8"
expect_rc 0 "cc -c -###" "$NK" cc "$CLANG" -### -c "$T/p.c" -o "$T/q.o"
grep -q 'numakit_prof' "$T/err" && fail "cc -c: no runtime library on a compile-only line"
expect_rc 0 "cc link" "$NK" cc "$CLANG" -O1 "$T/q.o" -o "$T/q"
readelf -d "$T/q" | grep -q 'NEEDED.*libnumakit_prof' || fail "linked program needs libnumakit_prof"
readelf -d "$T/q" | grep -q "R.*PATH.*$RTDIR" || fail "linked program has the runtime's rpath"
"$T/q" || fail "the linked program runs (runtime inactive without NK_PROF_DIR)"
expect_rc 0 "cc -- compiler" "$NK" cc -- "$CLANG" -O1 -c "$T/p.c" -o "$T/r.o"

# Errors.
expect_rc 2 "no compiler" "$NK" cc
grep -q 'no compiler given' "$T/err" || fail "no compiler: message"
if command -v gcc >/dev/null; then
    expect_rc 2 "gcc is refused" "$NK" cc gcc -c "$T/p.c" -o "$T/g.o"
    grep -q "does not support -fsanitize-coverage=trace-loads,trace-stores" "$T/err" || fail "gcc: message"
    [ -e "$T/g.o" ] && fail "gcc: nothing compiled"
fi
expect_rc 127 "missing compiler" "$NK" cc "$T/no-such-cc" -c "$T/p.c"
expect_rc 2 "unknown option" "$NK" cc --bogus
expect_rc 2 "print with a command" "$NK" cc --print-flags "$CLANG"
expect_rc 0 "--help" "$NK" cc --help
grep -q 'usage: numakit cc' "$T/out" || fail "--help: usage"
expect_rc 0 "help cc" "$NK" help cc
expect_rc 1 "compile error passes through" "$NK" cc "$CLANG" -c "$T/no-such-file.c" -o "$T/x.o"

[ "$fails" = 0 ] && echo ok
exit $((fails > 0))
