#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Issue 19 §3: the overhead of serving a site's allocations from its arena (numakit run --plan, "layout":
# "blocks") against the program's own malloc.  bench/malloc_site.c (one site; N malloc+free pairs, or N
# mallocs kept then freed) plain, under the plan runtime with the site not planned (the plan names another
# site of small blocks of the same program: every small malloc passes the caller check), and with the site
# planned (its blocks served from a jemalloc arena); the median of 9 runs each, in the same script; prints
# ns per malloc+free and the ratios against plain.  The site's key comes from a `numakit profile
# --small-blocks` report.  Usage: bench/malloc_site.sh BUILD [N] [SIZE]
B=${1:?usage: $0 BUILD [N] [SIZE]}
N=${2:-200000}
SIZE=${3:-64}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cc -O2 -g -fno-omit-frame-pointer -o "$T/malloc_site" "$(dirname "$0")/malloc_site.c" || exit 1
"$B/cli/numakit" profile --sampler pagefault --small-blocks --quiet -o "$T/p.nkp" -- "$T/malloc_site" kept 20000 \
  "$SIZE" >/dev/null 2>&1 || { echo "malloc_site.sh: profiling failed"; exit 1; }
"$B/cli/numakit" report --json "$T/p.nkp" >"$T/r.json" || exit 1
python3 - "$T" <<'PY' || exit 1
import json, sys
t = sys.argv[1]
r = json.load(open(t + "/r.json"))
v = [v for v in r["variables"] if v["kind"] == "heap" and "(site)" in v["name"] and v["site"]["layout"] == "blocks"]
if not v:
    sys.exit("malloc_site.sh: the site is not in the profile as a site of small blocks")
def plan(key, size):
    e = {"key": key, "policy": "cyclic", "when": "alloc", "layout": "blocks", "size": size}
    return json.dumps({"format": "numakit-plan", "version": 1, "entries": [e]})
open(t + "/planned.json", "w").write(plan(v[0]["key"], v[0]["size"]))
open(t + "/other.json", "w").write(plan("heap:%s+0x1;libc.so.6+0x1" % v[0]["key"][5:].split("+", 1)[0], 1 << 20))
PY
med() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
runs() { # $1: pairs|kept, then the command prefix
  m=$1; shift
  for i in 1 2 3 4 5 6 7 8 9; do "$@" "$T/malloc_site" "$m" "$N" "$SIZE" 2>/dev/null | cut -d' ' -f1; done | med
}
for m in pairs kept; do
  plain=$(runs $m env)
  other=$(runs $m "$B/cli/numakit" run --plan "$T/other.json" --)
  planned=$(runs $m "$B/cli/numakit" run --plan "$T/planned.json" --log "$T/planned.log" --)
  echo "$m: plain $plain ns, site not planned $other ns, site planned (arena) $planned ns per malloc+free ($N x $SIZE B)"
  python3 -c "print('$m ratio: not planned %.2f, planned %.2f' % ($other / $plain, $planned / $plain))"
done
grep -q " blocks ([0-9.]* MiB) served from its arena" "$T/planned.log" ||
  echo "malloc_site.sh: warning: the planned runs served nothing from an arena"
