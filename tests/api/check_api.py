#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The API tiers of the public headers (ctest api.tiers, label unit; include/numakit.h "API TIERS").

Checks include/numakit.h and its topic headers include/numakit/*.h:
  - each topic header states its tier at the top ("API TIER: stable" or "API TIER: experimental");
  - every NK_API declaration has a doc comment with "@since X.Y", followed by "(experimental)" exactly in
    the experimental headers;
  - no public header refers to an internal issue number ("issue 14");
  - preprocessed, <numakit.h> declares exactly the stable functions without NUMAKIT_EXPERIMENTAL and the
    experimental ones too with it, and including it again with the macro defined adds them (as zstd.h);
  - the headers of other libraries (SEPARATE: numakit/heap.h, libnumakit_heap) are not included by
    <numakit.h>, and, included alone, declare their own functions with NUMAKIT_EXPERIMENTAL and none without;
and, with the C compiler given (--cc), that
  - a stable-only program compiles with -std=c11 -Wall -Wextra -pedantic -Werror;
  - a call of an experimental function fails to compile without NUMAKIT_EXPERIMENTAL, because the function
    is undeclared, and compiles with it;
  - a use of a declaration marked NK_DEPRECATED("msg") compiles with a warning that carries msg, fails
    under -Werror, and compiles cleanly with NUMAKIT_DISABLE_DEPRECATE_WARNINGS.

Usage: check_api.py --include DIR --cc CC
       check_api.py --self-test --include DIR --cc CC   (the header checks fail on altered copies)
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

TIER = re.compile(r"API TIER: (stable|experimental)\b")
SINCE = re.compile(r"@since (\d+\.\d+)( \(experimental\))?")
ISSUE = re.compile(r"\bissues? #?\d+", re.I)
# Topic headers of another library than libnumakit, which the umbrella <numakit.h> must not include: the user
# includes them and links that library (as numakit/omp.h, header-only, is included by hand).
SEPARATE = {"numakit/heap.h": "libnumakit_heap"}


def declarations(text):
    """[(name, doc comment or None)] of the NK_API declarations of a header's text."""
    lines = text.split("\n")
    decls, i = [], 0
    while i < len(lines):
        if re.match(r"\s*NK_API\b", lines[i]):
            j = i
            while ";" not in lines[j]:
                j += 1
            decls.append((i, j))
            i = j + 1
        else:
            i += 1
    ends = {b: a for a, b in decls}
    out = []
    for a, b in decls:
        decl = " ".join(lines[a:b + 1])
        decl = re.sub(r'\bNK_DEPRECATED\s*\(\s*"(?:[^"\\]|\\.)*"\s*\)', "", decl)
        m = re.search(r"\b(nk_\w+)\s*\(", decl)
        p = a - 1
        while p in ends:  # a group of declarations under one comment
            p = ends[p] - 1
        doc = None
        if p >= 0 and lines[p].rstrip().endswith("*/"):
            q = p
            while "/*" not in lines[q]:
                q -= 1
            if lines[q].lstrip().startswith("/**"):
                doc = "\n".join(lines[q:p + 1])
        out.append((m.group(1) if m else decl, doc))
    return out


def check_headers(inc):
    """Problems of the headers' text; and the stable and experimental function names."""
    problems, stable, experimental = [], set(), set()
    separate = {h: set() for h in SEPARATE}
    headers = [os.path.join(inc, "numakit.h")] + sorted(glob.glob(os.path.join(inc, "numakit", "*.h")))
    for h in headers:
        text = open(h).read()
        rel = os.path.relpath(h, inc)
        for n, line in enumerate(text.split("\n"), 1):
            if ISSUE.search(line):
                problems.append(f"{rel}:{n}: refers to an internal issue: {line.strip()}")
        decls = declarations(text)
        if rel == "numakit.h":
            if decls:
                problems.append(f"{rel}: the umbrella declares functions; they belong in a topic header")
            for sep, lib in SEPARATE.items():
                if re.search(r'^\s*#\s*include\s*["<]' + re.escape(sep) + '[">]', text, flags=re.M):
                    problems.append(f"{rel}: includes {sep}, which belongs to {lib}: users include it themselves")
            continue
        m = TIER.search(text[:text.find("*/")] if "*/" in text else "")
        if not m:
            problems.append(f"{rel}: no 'API TIER: stable|experimental' in its opening comment")
            continue
        tier = m.group(1)
        if tier == "experimental" and "#if defined(NUMAKIT_EXPERIMENTAL)" not in text:
            problems.append(f"{rel}: experimental, but nothing is guarded by NUMAKIT_EXPERIMENTAL")
        for name, doc in decls:
            if rel in separate:
                separate[rel].add((name, tier))
                continue
            (experimental if tier == "experimental" else stable).add(name)
            s = SINCE.search(doc or "")
            if not s:
                problems.append(f"{rel}: {name}: no doc comment with '@since X.Y'")
            elif bool(s.group(2)) != (tier == "experimental"):
                problems.append(f"{rel}: {name}: '{s.group(0)}' in a header of tier {tier} (experimental ones "
                                f"say '@since X.Y (experimental)', stable ones '@since X.Y')")
    for sep in SEPARATE:
        if os.path.exists(os.path.join(inc, sep)) and not separate[sep]:
            problems.append(f"{sep}: declares no NK_API function")
    CHECK_SEPARATE.clear()
    CHECK_SEPARATE.update(separate)
    return problems, stable, experimental


# {header: {(name, tier)}} of the SEPARATE headers, filled by check_headers for check_compiler.
CHECK_SEPARATE = {}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def preprocessed_names(cc, inc, source, defs):
    r = run([cc, "-E", "-P", "-std=c11", "-I", inc] + defs + ["-x", "c", "-"], input=source)
    if r.returncode:
        return None, r.stderr
    return set(re.findall(r"\b(nk_\w+)\s*\(", r.stdout)), ""


def compile_c(cc, inc, tmp, source, flags):
    path = os.path.join(tmp, "t.c")
    with open(path, "w") as f:
        f.write(source)
    return run([cc, "-std=c11", "-c", "-o", os.path.join(tmp, "t.o"), "-I", inc] + flags + [path])


STABLE_USE = """#include <numakit.h>
#include <stdio.h>
int main(void)
{
	nk_machine *m = NULL;
	if (nk_machine_load_synthetic("nodes=2 cores=1", &m, NULL) != NK_OK)
		return 1;
	printf("%s %d\\n", nk_version(), nk_machine_num_nodes(m));
	nk_machine_free(m);
	return 0;
}
"""
EXPERIMENTAL_USE = """#include <numakit.h>
int main(void)
{
	return nk_profile_active();
}
"""
TWICE = """#include <numakit.h>
#define NUMAKIT_EXPERIMENTAL
#include <numakit.h>
int main(void)
{
	return nk_profile_active() + (nk_launcher_name(NK_LAUNCHER_NONE) == 0);
}
"""
DEPRECATED_MSG = "use nk_version() instead"
DEPRECATED_USE = """#include <numakit.h>
NK_API NK_DEPRECATED("%s") const char *nk_test_old_version(void);
const char *use(void);
const char *use(void)
{
	return nk_test_old_version();
}
""" % DEPRECATED_MSG


def check_compiler(cc, inc, stable, experimental):
    problems = []
    # what the preprocessor leaves declared, each way
    src = "#include <numakit.h>\n"
    for defs, want in (([], stable), (["-DNUMAKIT_EXPERIMENTAL"], stable | experimental)):
        got, err = preprocessed_names(cc, inc, src, defs)
        if got is None:
            problems.append(f"<numakit.h> {' '.join(defs)}: does not preprocess: {err}")
            continue
        for name in sorted(want - got):
            problems.append(f"<numakit.h> {' '.join(defs) or 'without NUMAKIT_EXPERIMENTAL'}: {name} not declared")
        for name in sorted((got & (stable | experimental)) - want):
            problems.append(f"<numakit.h> without NUMAKIT_EXPERIMENTAL: the experimental {name} is declared")
    # a header of another library: alone, it declares its own functions (under the macro when experimental)
    for sep, decls in CHECK_SEPARATE.items():
        names = {n for n, _ in decls}
        stable_sep = {n for n, t in decls if t == "stable"}
        for defs, want in (([], stable_sep), (["-DNUMAKIT_EXPERIMENTAL"], names)):
            got, err = preprocessed_names(cc, inc, f"#include <{sep}>\n", defs)
            if got is None:
                problems.append(f"<{sep}> {' '.join(defs)}: does not compile alone: {err}")
                continue
            for name in sorted(want - got):
                problems.append(f"<{sep}> {' '.join(defs) or 'without NUMAKIT_EXPERIMENTAL'}: {name} not declared")
            for name in sorted((got & names) - want):
                problems.append(f"<{sep}> without NUMAKIT_EXPERIMENTAL: the experimental {name} is declared")
    with tempfile.TemporaryDirectory() as tmp:
        warn = ["-Wall", "-Wextra", "-pedantic", "-Werror"]
        r = compile_c(cc, inc, tmp, STABLE_USE, warn)
        if r.returncode:
            problems.append("a stable-only program does not compile with " + " ".join(warn) + ":\n" + r.stderr)
        # -Werror=implicit-function-declaration: an error on every compiler version, not only GCC >= 14
        strict = ["-Wall", "-Werror=implicit-function-declaration"]
        r = compile_c(cc, inc, tmp, EXPERIMENTAL_USE, strict)
        undeclared = re.search(r"(implicit declaration of function|undeclared function)\s+.nk_profile_active",
                               r.stderr)
        if r.returncode == 0:
            problems.append("nk_profile_active() compiled without NUMAKIT_EXPERIMENTAL")
        elif not undeclared:
            problems.append("without NUMAKIT_EXPERIMENTAL, nk_profile_active() failed for another reason than "
                            "being undeclared:\n" + r.stderr)
        r = compile_c(cc, inc, tmp, EXPERIMENTAL_USE, strict + ["-DNUMAKIT_EXPERIMENTAL"])
        if r.returncode:
            problems.append("nk_profile_active() does not compile with NUMAKIT_EXPERIMENTAL:\n" + r.stderr)
        r = compile_c(cc, inc, tmp, TWICE, strict + ["-Werror"])
        if r.returncode:
            problems.append("<numakit.h> included again with NUMAKIT_EXPERIMENTAL does not declare the "
                            "experimental API:\n" + r.stderr)
        # NK_DEPRECATED: a warning carrying the message; an error under -Werror; silenced by the macro
        r = compile_c(cc, inc, tmp, DEPRECATED_USE, ["-Wall"])
        if r.returncode or "deprecated" not in r.stderr or DEPRECATED_MSG not in r.stderr:
            problems.append(f"a use of an NK_DEPRECATED(\"{DEPRECATED_MSG}\") function: exit {r.returncode}, "
                            f"expected 0 and a warning with the message:\n{r.stderr}")
        r = compile_c(cc, inc, tmp, DEPRECATED_USE, ["-Wall", "-Werror"])
        if r.returncode == 0:
            problems.append("a use of an NK_DEPRECATED function compiled under -Werror")
        r = compile_c(cc, inc, tmp, DEPRECATED_USE, ["-Wall", "-Werror", "-DNUMAKIT_DISABLE_DEPRECATE_WARNINGS"])
        if r.returncode or r.stderr.strip():
            problems.append("NUMAKIT_DISABLE_DEPRECATE_WARNINGS did not silence the deprecation warning:\n"
                            + r.stderr)
    return problems


def self_test(args):
    """The header checks must fail on altered copies of the headers, each with its own message."""
    def altered(edit):
        tmp = tempfile.mkdtemp()
        shutil.copytree(args.include, os.path.join(tmp, "include"))
        edit(os.path.join(tmp, "include"))
        return tmp

    def sub(path, old, new):
        text = open(path).read()
        assert old in text, (path, old)
        open(path, "w").write(text.replace(old, new, 1))

    cases = {
        "unaltered": (lambda d: None, None),
        "an issue number": (lambda d: sub(os.path.join(d, "numakit", "machine.h"), "Load the live machine",
                                          "Load the live machine (issue 3)"), "refers to an internal issue"),
        "a missing @since": (lambda d: sub(os.path.join(d, "numakit", "policy.h"), " * @since 0.1\n", ""),
                             "no doc comment with '@since X.Y'"),
        "a stable @since in an experimental header": (
            lambda d: sub(os.path.join(d, "numakit", "job.h"), "@since 0.1 (experimental)", "@since 0.1"),
            "in a header of tier experimental"),
        "no tier": (lambda d: sub(os.path.join(d, "numakit", "bench.h"), "API TIER: stable", "API: stable"),
                    "no 'API TIER"),
        "the umbrella including a header of another library": (
            lambda d: sub(os.path.join(d, "numakit.h"), '#include "numakit/advice.h"\n',
                          '#include "numakit/advice.h"\n#include "numakit/heap.h"\n'), "which belongs to libnumakit_heap"),
        "an unguarded experimental header": (
            lambda d: sub(os.path.join(d, "numakit", "advice.h"), "#if defined(NUMAKIT_EXPERIMENTAL) &&",
                          "#if 1 ||"), "nothing is guarded"),
    }
    bad = 0
    for what, (edit, expect) in cases.items():
        tmp = altered(edit)
        try:
            problems, _, _ = check_headers(os.path.join(tmp, "include"))
        finally:
            shutil.rmtree(tmp)
        ok = not problems if expect is None else any(expect in p for p in problems)
        print(f"check_api self-test: {what}: {len(problems)} problem(s), {'as expected' if ok else 'NOT AS EXPECTED'}")
        if not ok:
            print("\n".join(problems))
            bad += 1
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--include", required=True)
    ap.add_argument("--cc", required=True)
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        sys.exit(self_test(args))
    problems, stable, experimental = check_headers(args.include)
    if not problems:
        problems = check_compiler(args.cc, args.include, stable, experimental)
    for p in problems:
        print(f"check_api: {p}")
    if not problems:
        sep = ", ".join(f"{h} ({SEPARATE[h]}): {len(d)}" for h, d in CHECK_SEPARATE.items())
        print(f"check_api: {len(stable)} stable and {len(experimental)} experimental functions, each with "
              f"@since; the guard, the deprecation macro and its silencer work with {args.cc}; "
              f"not in <numakit.h>: {sep}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
