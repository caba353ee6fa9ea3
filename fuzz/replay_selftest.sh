#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The ctest fuzz-replay.self-test: replay_selftest.c's target (it aborts on an input beginning "crash")
# replayed on a corpus of a-fine, b-crash-me, c-never-reached must fail, after replaying a-fine, with
# b-crash-me named on its last "replay:" line.  Usage: replay_selftest.sh DRIVER CORPUS
out=$("$1" "$2" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -ne 0 ] || { echo "self-test FAILED: the replay passed a corpus with a crashing input"; exit 1; }
printf '%s\n' "$out" | grep -q '^replay: .*/a-fine ' || { echo "self-test FAILED: a-fine was not replayed"; exit 1; }
last=$(printf '%s\n' "$out" | grep '^replay: ' | tail -n1)
case $last in
*"/b-crash-me "*) ;;
*) echo "self-test FAILED: the last line does not name the crashing input: $last"; exit 1 ;;
esac
echo "self-test: the crashing input failed the replay (exit $rc) and was named"
