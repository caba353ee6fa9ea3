#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# numakit run --rank-map on this host, for real (cli.run.rankmap-live): a one-rank map of this host's first
# allowed cpu binds the command there, cpus and memory (numakit run -s inside it prints what it got); the
# same map under fake Open MPI variables; a map naming another host is refused with status 2.
# Skips (77) where this process may not set a memory policy.
set -u
nk=$1
dir=$2
rm -rf "$dir" && mkdir -p "$dir" || exit 1
for v in $(env | sed -n 's/^\(OMPI_[A-Z_]*\|PMI_[A-Z_]*\|PMIX_[A-Z_]*\|MPI_LOCAL[A-Z_]*\|SLURM_[A-Z_]*\)=.*/\1/p'); do
	unset "$v"
done
cpu=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status | cut -d, -f1 | cut -d- -f1)
[ -n "$cpu" ] || { echo "no Cpus_allowed_list"; exit 1; }
if ! "$nk" run --membind all -- true 2>/dev/null; then
	echo "SKIP: this process may not set a memory policy"
	exit 77
fi
node=$("$nk" run --cpus "$cpu" -- "$nk" run -s | sed -n 's/^nodebind: \([0-9]*\).*/\1/p')
echo "rank 0=localhost slot=$cpu" >"$dir/one.map"
fail() { echo "FAIL: $*"; exit 1; }
out=$("$nk" run --rank-map "$dir/one.map" -- "$nk" run -s 2>"$dir/err") || fail "run --rank-map: $(cat "$dir/err")"
echo "$out"
cat "$dir/err"
echo "$out" | grep -qx "policy: bind" || fail "policy is not bind"
echo "$out" | grep -qx "physcpubind: $cpu *" || fail "physcpubind is not $cpu"
grep -q "no MPI launcher: the map's only rank, 0: .*cpus $cpu, memory bound to node $node" "$dir/err" || fail "no message"
out=$(OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=1 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 \
	"$nk" run -q --rank-map "$dir/one.map" -- "$nk" run -s 2>"$dir/err") || fail "run -q --rank-map"
[ -s "$dir/err" ] && fail "-q printed: $(cat "$dir/err")"
echo "$out" | grep -qx "membind: $node *" || fail "membind is not $node"
echo "rank 0=no-such-host.invalid slot=$cpu" >"$dir/other.map"
"$nk" run --rank-map "$dir/other.map" -- true 2>"$dir/err"
rc=$?
[ $rc -eq 2 ] || fail "another host: status $rc, expected 2"
grep -q "rank 0 is mapped to host no-such-host.invalid but runs on" "$dir/err" || fail "another host: $(cat "$dir/err")"
echo "OK"
