#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The ABI check of libnumakit.so (ctest abi.libnumakit, label abi; docs/architecture.md "Tests").

The same script checks libnumakit_heap.so (ctest abi.libnumakit_heap: abi/libnumakit_heap.map and .symbols):
each library is given its own headers, so numakit/heap.h goes with libnumakit_heap only (abi/CMakeLists.txt),
and a heap function that libnumakit.so exported again would fail abi.libnumakit ("not an NK_API function").

Compares what the built library exports (readelf --dyn-syms: every defined global symbol with its version)
with the record of it, abi/libnumakit.symbols, and with the two sources of what it should export: the
version script abi/libnumakit.map and the NK_API declarations of the public headers: the umbrella
include/numakit.h and its topic headers include/numakit/*.h (one --header each), stable and experimental
alike: an experimental function is declared only under NUMAKIT_EXPERIMENTAL, but exported as any other.

Fails when, under the same soname,
  - a recorded symbol is gone, or has another version or type (an ABI break: old programs stop loading);
  - the library exports a symbol the record does not have (added on purpose: regenerate the record);
  - the library's soname is not the recorded one (a new ABI: regenerate the record);
and whatever the record says, when
  - an exported symbol has no version (the version script was not applied);
  - the exports differ from the version script, or a public node's symbols from the headers' NK_API
    functions, or a NUMAKIT_PRIVATE symbol is not an nk__ name.

Usage: check_abi.py --lib LIB --symbols LIST --map MAP --header H [--header H ...] [--readelf R] [--update]
       check_abi.py --self-test --lib LIB --symbols LIST --map MAP --header H [--header H ...] [--readelf R]
--update rewrites LIST from LIB (the other checks still run). --self-test proves the check can fail: it runs
the check against altered copies of LIST (one symbol more, one fewer, one version changed, another soname)
and without the last header that declares functions, and fails unless each of them fails with its own
message and the unaltered copy passes.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

PRIVATE_NODE = "NUMAKIT_PRIVATE"
UPDATE_HOWTO = "ninja -C BUILD abi-update (or: python3 abi/check_abi.py ... --update)"


def readelf_exports(readelf, lib):
    """(soname, {name: (version, type)}, [unversioned names]) of the defined global dynamic symbols."""
    out = subprocess.run([readelf, "-W", "--dyn-syms", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    soname = None
    m = re.search(r"\(SONAME\)\s+Library soname: \[([^\]]+)\]", out)
    if m:
        soname = m.group(1)
    syms, unversioned = {}, []
    for line in out.splitlines():
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) < 8 or not f[0].rstrip(":").isdigit():
            continue
        typ, bind, ndx, name = f[3], f[4], f[6], f[7]
        if ndx == "UND" or bind not in ("GLOBAL", "WEAK"):
            continue
        base, at, ver = name.partition("@")
        ver = ver.lstrip("@")
        if ndx == "ABS" and f[2] == "0" and (base == ver or not at):
            continue  # a version definition (NUMAKIT_0.1 itself), not a symbol
        if not at:
            unversioned.append(base)
            continue
        syms[base] = (ver, typ)
    return soname, syms, unversioned


def read_list(path):
    soname, syms = None, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            f_ = line.split()
            if f_[0] == "soname" and len(f_) == 2:
                soname = f_[1]
            elif len(f_) == 3:
                syms[f_[1]] = (f_[0], f_[2])
            else:
                sys.exit(f"{path}:{n}: expected 'VERSION NAME TYPE' or 'soname NAME', got '{line}'")
    return soname, syms


def write_list(path, soname, syms):
    # libnumakit.so.0 -> libnumakit; libnumakit_heap.so.0 -> libnumakit_heap (each library its own record)
    lib = (soname or "libnumakit.so").split(".so")[0]
    with open(path, "w") as f:
        f.write(f"# The dynamic symbols {lib}.so exports: VERSION NAME TYPE, one a line, and its soname.\n"
                "# Generated from the built library by abi/check_abi.py --update (ninja -C BUILD abi-update);\n"
                f"# checked by the ctest abi.{lib}. Do not edit by hand: change abi/{lib}.map and\n"
                "# its public headers, build, regenerate. A line that disappears is an ABI break.\n")
        f.write(f"soname {soname}\n")
        for name, (ver, typ) in sorted(syms.items(), key=lambda kv: (kv[1][0] == PRIVATE_NODE, kv[1][0], kv[0])):
            f.write(f"{ver} {name} {typ}\n")


def read_map(path):
    """{name: node} of the global symbols of a version script (no wildcards in global: lists)."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    text = re.sub(r"#[^\n]*", "", text)
    out = {}
    for node, body in re.findall(r"([A-Za-z_][\w.]*)\s*\{(.*?)\}\s*[\w.]*\s*;", text, flags=re.S):
        glob = re.split(r"\blocal\s*:", body)[0]
        glob = re.sub(r"\bglobal\s*:", "", glob)
        for name in (s.strip() for s in glob.split(";")):
            if name:
                out[name] = node
    return out


def read_header(path):
    """The NK_API function names declared in a public header (NK_DEPRECATED("...") ones included)."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    text = re.sub(r'\bNK_DEPRECATED\s*\(\s*"(?:[^"\\]|\\.)*"\s*\)', "", text)
    return set(re.findall(r"^\s*NK_API\b[^;(]*?\b(nk_\w+)\s*\(", text, flags=re.M))


def check(args):
    problems = []
    soname, syms, unversioned = readelf_exports(args.readelf, args.lib)
    if not soname:
        problems.append(f"{args.lib} has no soname (set VERSION/SOVERSION of the target)")
    for name in unversioned:
        problems.append(f"{name}: exported without a version (is {args.map} the version script?)")

    mapped = read_map(args.map)
    for name in sorted(set(mapped) - set(syms)):
        problems.append(f"{name}: in {args.map} (node {mapped[name]}) but not exported by the library")
    for name in sorted(set(syms) - set(mapped)):
        problems.append(f"{name}: exported but not in {args.map}")
    for name, (ver, _) in sorted(syms.items()):
        if name in mapped and mapped[name] != ver:
            problems.append(f"{name}: exported at {ver}, {args.map} says {mapped[name]}")

    declared = set()
    for h in args.header:
        declared |= read_header(h)
    public = {n for n, (v, _) in syms.items() if v != PRIVATE_NODE}
    for name in sorted(declared - public):
        problems.append(f"{name}: declared NK_API in a public header but not exported in a public node "
                        f"(add it to a new node of {args.map})")
    for name in sorted(public - declared):
        problems.append(f"{name}: exported in node {syms[name][0]} but not an NK_API function of the public headers")
    for name, (ver, _) in sorted(syms.items()):
        if ver == PRIVATE_NODE and not name.startswith("nk__"):
            problems.append(f"{name}: in {PRIVATE_NODE}, which holds only internal nk__ names")
        if ver != PRIVATE_NODE and name.startswith("nk__"):
            problems.append(f"{name}: an internal nk__ name in the public node {ver}")

    if args.update:
        write_list(args.symbols, soname, syms)
        print(f"check_abi: wrote {len(syms)} symbols of {soname} to {args.symbols}")
    else:
        rec_soname, rec = read_list(args.symbols)
        if rec_soname != soname:
            problems.append(f"the soname is {soname}, the record {args.symbols} says {rec_soname}: a new ABI; "
                            f"regenerate the record: {UPDATE_HOWTO}")
        else:
            for name, (ver, typ) in sorted(rec.items()):
                if name not in syms:
                    problems.append(f"REMOVED {name}@{ver}: an ABI break under soname {soname}; keep it, or "
                                    "bump SOVERSION (src/CMakeLists.txt) and regenerate the record")
                elif syms[name] != (ver, typ):
                    problems.append(f"CHANGED {name}: {ver} {typ} in the record, {syms[name][0]} {syms[name][1]} "
                                    f"exported: an ABI break under soname {soname}; a symbol keeps its version")
            for name in sorted(set(syms) - set(rec)):
                problems.append(f"ADDED {name}@{syms[name][0]}: not in the record. If on purpose (declared NK_API "
                                f"in include/numakit/TOPIC.h, in a new version node of {args.map}), regenerate the "
                                f"record: {UPDATE_HOWTO}, and commit {args.symbols}")

    for p in problems:
        print(f"check_abi: {p}")
    if not problems and not args.update:
        print(f"check_abi: {args.lib}: {soname}, {len(syms)} symbols as recorded in {args.symbols}")
    return 1 if problems else 0


def self_test(args):
    """Run this script against altered copies of the record, and without the last of the headers that
    declare functions; each must fail with its own message."""
    soname, rec = read_list(args.symbols)
    name0 = sorted(n for n, (v, _) in rec.items() if v != PRIVATE_NODE)[0]
    dropped = [h for h in args.header if read_header(h)][-1]
    cases = {
        "unaltered": (soname, dict(rec), None, args.header),
        "extra symbol": (soname, {**rec, "nk_gone_from_the_library": ("NUMAKIT_0.1", "FUNC")}, "REMOVED ",
                         args.header),
        "missing symbol": (soname, {k: v for k, v in rec.items() if k != name0}, "ADDED ", args.header),
        "other version": (soname, {**rec, name0: ("NUMAKIT_0.0", rec[name0][1])}, "CHANGED ", args.header),
        "other soname": ("libnumakit.so.999", dict(rec), "the soname is", args.header),
        # a topic header left unread: its functions are exports that no header declares
        f"without {os.path.basename(dropped)}": (soname, dict(rec), "but not an NK_API function",
                                                 [h for h in args.header if h != dropped]),
    }
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for what, (so, syms, expect, headers) in cases.items():
            path = os.path.join(tmp, "symbols")
            write_list(path, so, syms)
            cmd = [sys.executable, os.path.abspath(__file__), "--lib", args.lib, "--symbols", path, "--map", args.map,
                   "--readelf", args.readelf] + sum((["--header", h] for h in headers), [])
            r = subprocess.run(cmd, capture_output=True, text=True)
            ok = r.returncode == 0 if expect is None else (r.returncode == 1 and expect in r.stdout)
            print(f"check_abi self-test: {what}: exit {r.returncode}, "
                  f"{'as expected' if ok else 'NOT AS EXPECTED'}")
            if not ok:
                print(r.stdout + r.stderr)
                bad += 1
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--symbols", required=True)
    ap.add_argument("--map", required=True)
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    sys.exit(self_test(args) if args.self_test else check(args))


if __name__ == "__main__":
    main()
