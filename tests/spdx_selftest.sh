#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# spdx_check.py can fail: a checkout with one untagged C file must be named and exit 1; tagged, exit 0.
set -u
CHECK=$1
command -v git >/dev/null 2>&1 || { echo "SKIP: no git"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
git -C "$T" init -q && printf '/*\n * no tag here\n */\nint x;\n' > "$T/a.c" && git -C "$T" add a.c || exit 1
out=$(python3 "$CHECK" "$T"); rc=$?
[ "$rc" = 1 ] && echo "$out" | grep -q "a.c" || { echo "FAIL: untagged a.c: exit $rc: $out"; exit 1; }
printf '/* SPDX-License-Identifier: BSD-3-Clause\n */\nint x;\n' > "$T/a.c"
python3 "$CHECK" "$T" >/dev/null || { echo "FAIL: tagged a.c refused"; exit 1; }
echo "ok: the check names an untagged file and passes a tagged one"
