#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Test-only walker of profiler *part* files (src/profile/nkp.h): prints or returns the records.

Usage: partdump.py FILE.part...   (one line per record)
"""
import json
import struct
import sys

TYPES = {1: "RUN", 2: "MACHINE", 3: "PROCESS", 4: "META", 5: "MAPS", 6: "THREAD", 7: "SITE", 8: "ALLOC",
         9: "FREE", 10: "NAME", 11: "PHASE", 12: "SAMPLES", 13: "END", 14: "TRAILER", 15: "BLOCKS",
         16: "COMM", 17: "CALLERS"}
SAMPLE = struct.Struct("<QQQIIIhhhHBBBB")
BLOCK = struct.Struct("<QQIIIHH")  # small-block events (--small-blocks): addr, time, size, site, tid, kind, reserved
assert BLOCK.size == 32
CALLER = struct.Struct("<QQIHH6Q")  # CALLERS entries: time, addr, tid, depth, reserved, 6 return addresses
assert CALLER.size == 72
assert SAMPLE.size == 48


class PartError(Exception):
    pass


def decode(t, p):
    name = TYPES.get(t & 0x7fff, "TYPE%d" % t)
    if name in ("META", "END", "RUN", "MACHINE"):
        return name, json.loads(p.decode("utf-8"))
    if name == "PROCESS":
        pid, ppid, start = struct.unpack("<IIQ", p)
        return name, {"pid": pid, "ppid": ppid, "start_ns": start}
    if name == "MAPS":
        (t_ns,) = struct.unpack_from("<Q", p)
        return name, {"time_ns": t_ns, "text": p[8:].decode("utf-8", "replace")}
    if name == "THREAD":
        tid, idx, t_ns, lo, hi, cpu, _ = struct.unpack("<IIQQQiI", p)
        return name, {"tid": tid, "index": idx, "time_ns": t_ns, "stack_lo": lo, "stack_hi": hi, "cpu": cpu}
    if name == "SITE":
        sid, depth = struct.unpack_from("<II", p)
        if len(p) != 8 + 8 * depth:
            raise PartError("SITE length")
        return name, {"id": sid, "ips": list(struct.unpack_from("<%dQ" % depth, p, 8))}
    if name == "ALLOC":
        a, s, t_ns, tid, site, kind, aid = struct.unpack("<QQQIIII", p)
        return name, {"addr": a, "size": s, "time_ns": t_ns, "tid": tid, "site": site, "kind": kind, "id": aid}
    if name == "FREE":
        a, t_ns, tid, aid = struct.unpack("<QQII", p)
        return name, {"addr": a, "time_ns": t_ns, "tid": tid, "id": aid}
    if name == "NAME":
        a, s, t_ns = struct.unpack_from("<QQQ", p)
        return name, {"addr": a, "size": s, "time_ns": t_ns, "name": p[24:].decode()}
    if name == "PHASE":
        t_ns, tid, pid_, kind = struct.unpack_from("<QIHH", p)
        return name, {"time_ns": t_ns, "tid": tid, "id": pid_, "kind": kind, "name": p[16:].decode()}
    if name == "SAMPLES":
        if len(p) % 48:
            raise PartError("SAMPLES length")
        return name, [SAMPLE.unpack_from(p, o) for o in range(0, len(p), 48)]
    if name == "COMM":
        rank, size, n, flags, t_ns = struct.unpack_from("<IIIIQ", p)
        peers = [dict(zip(("peer", "kind", "messages", "bytes"), struct.unpack_from("<IIQQ", p, 24 + 24 * i)))
                 for i in range(n)]
        return name, {"rank": rank, "size": size, "flags": flags, "time_ns": t_ns, "peers": peers}
    if name == "BLOCKS":
        if len(p) % BLOCK.size:
            raise PartError("BLOCKS length")
        return name, [dict(zip(("addr", "time_ns", "size", "site", "tid", "kind", "reserved"),
                               BLOCK.unpack_from(p, o))) for o in range(0, len(p), BLOCK.size)]
    if name == "CALLERS":
        if len(p) % CALLER.size:
            raise PartError("CALLERS length")
        out = []
        for o in range(0, len(p), CALLER.size):
            v = CALLER.unpack_from(p, o)
            out.append({"time_ns": v[0], "addr": v[1], "tid": v[2], "depth": v[3], "reserved": v[4],
                        "ret": list(v[5:5 + v[3]]), "rest": list(v[5 + v[3]:])})
        return name, out
    return name, p


def parse(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] != b"NKPROF\r\n":
        raise PartError("%s: bad header" % path)
    ver, hsize = struct.unpack_from("<II", data, 8)
    if ver != 1:
        raise PartError("version %d" % ver)
    off, out = hsize, []
    while off < len(data):
        if off + 16 > len(data):
            raise PartError("%s: truncated record header at %d" % (path, off))
        t, flags, length = struct.unpack_from("<IIQ", data, off)
        if off + 16 + length > len(data):
            raise PartError("%s: truncated payload at %d" % (path, off))
        out.append(decode(t, data[off + 16:off + 16 + length]))
        off += 16 + length
    return out


def main():
    for path in sys.argv[1:]:
        print("==", path)
        for name, v in parse(path):
            if name == "MAPS":
                v = dict(v, text="<%d bytes>" % len(v["text"]))
            elif name == "SAMPLES":
                v = "<%d samples>" % len(v)
            print(name, v)


if __name__ == "__main__":
    main()
