#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Every source file of the project carries the SPDX license line (LICENSE: BSD-3-Clause) in its first
lines: C, C++ and headers, Fortran, Python, shell, CMake, the linker script, man pages, and scripts without
an extension that start with #!.  Test data, corpora and goldens are left out (some come from hwloc:
THIRD-PARTY-NOTICES).  Usage: spdx_check.py SOURCE_DIR.  Exit 0 all tagged, 1 files named, 77 no git."""
import os
import re
import subprocess
import sys

TAG = "SPDX-License-Identifier: BSD-3-Clause"
SKIP = re.compile(r"^(tests/cli/data|tests/data|fuzz/corpus|tests/cli/expected)/|^abi/libnumakit\.symbols$")
SOURCE_EXT = {".c", ".h", ".cc", ".cpp", ".f90", ".py", ".sh", ".cmake", ".map", ".1", ".3"}


def is_source(path, head):
    ext = os.path.splitext(path)[1]
    return (ext in SOURCE_EXT or os.path.basename(path) == "CMakeLists.txt"
            or (ext == "" and head.startswith("#!")))


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    try:
        out = subprocess.run(["git", "-C", src, "ls-files"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        print("SKIP: not a git checkout (or no git): the files to check are git's")
        return 77
    missing = []
    for f in out.split():
        p = os.path.join(src, f)
        if SKIP.search(f) or not os.path.isfile(p) or os.path.islink(p):
            continue
        try:
            head = open(p, encoding="utf-8").read(400)
        except (UnicodeDecodeError, OSError):
            continue
        if is_source(f, head) and TAG not in head:
            missing.append(f)
    for f in missing:
        print("no '%s' in the first lines of %s" % (TAG, f))
    if missing:
        print("%d file(s) without the license line: add it as the first comment line (after a #! line)" % len(missing))
        return 1
    print("ok: every source file carries %s" % TAG)
    return 0


if __name__ == "__main__":
    sys.exit(main())
