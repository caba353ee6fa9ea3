#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs everything numakit's build and tests need on Debian 12 (bookworm): compilers and libraries,
# the test oracles (numactl, hwloc), QEMU, the two guest kernels and virtme-ng. Idempotent: what is
# already there is left alone, and when everything is present it only checks (about a second).
# Runs as root (or through sudo) without a terminal, as CI does. Prints what it does.
set -euo pipefail

VIRTME_NG_VERSION=1.42   # the version the guest runner was written and measured with

PACKAGES=(
  cmake ninja-build gcc clang libclang-rt-14-dev pkg-config git   # build; clang + rt for fuzzing
  libclang-dev                                                      # numakit advise --source (libclang C API)
  libhwloc-dev hwloc libjansson-dev libcmocka-dev                   # libraries, unit-test framework
  numactl libnuma-dev                                               # test oracles, benchmark baseline
  qemu-system-x86 busybox-static                                    # NUMA guests (vng's initramfs uses busybox)
  linux-image-amd64 linux-image-6.12-amd64                          # guest kernels 6.1 and 6.12
  python3 python3-pip                                               # guest runner and tests; pip for virtme-ng
  g++ gfortran libomp-14-dev                                        # C++ and Fortran use of the header; LLVM OpenMP runtime
  libdw-dev libelf-dev                                              # profiler: ELF symbols, DWARF, source lines (elfutils)
  libzydis-dev                                                      # profiler: the timer sampler decodes x86-64 instructions (optional)
  libjemalloc-dev                                                   # plan runtime: arenas for sites of small blocks (optional)
  chromium                                                          # profiler: renders the HTML report headless in tests
  openmpi-bin libopenmpi-dev mpich                                  # MPI jobs: real launchers for the guest tests mpi_run, mpi_profile (optional: they skip without; numakit links no MPI)
)

say() { echo "setup: $*"; }

SUDO=()
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=(sudo -n)
  else SUDO=(false); fi
fi
as_root() {
  if [ "${SUDO[0]:-}" = false ]; then
    say "need root to run: $*"; exit 1
  fi
  "${SUDO[@]}" "$@"
}

# ---- Debian packages ----
missing=()
for p in "${PACKAGES[@]}"; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$st" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  say "Debian packages: all ${#PACKAGES[@]} present"
fi

# ---- kernels for the guests (tests/vm/topologies.json finds them by these patterns) ----
for pat in '/boot/vmlinuz-6.12.*-amd64' '/boot/vmlinuz-6.1.*-amd64'; do
  # shellcheck disable=SC2086
  k=$(ls -1 $pat 2>/dev/null | sort -V | tail -n1 || true)
  if [ -z "$k" ]; then say "no kernel matching $pat after installing its package"; exit 1; fi
  if [ ! -r "$k" ]; then
    say "warning: $k is not readable by $(id -un); run the guests as root or: sudo chmod a+r $k"
  else
    say "guest kernel: $k"
  fi
done

# ---- virtme-ng (PyPI) ----
vng_version() { vng --version 2>/dev/null | awk '{print $2}'; }
if command -v vng >/dev/null && [ "$(vng_version)" = "$VIRTME_NG_VERSION" ]; then
  say "virtme-ng $VIRTME_NG_VERSION present: $(command -v vng)"
else
  say "installing virtme-ng $VIRTME_NG_VERSION from PyPI (found: $(vng_version || true))"
  PY=python3
  pipflags=(--quiet --disable-pip-version-check --root-user-action=ignore)
  # Debian's own python3 is "externally managed" (PEP 668): installing into it needs this flag.
  if "$PY" -c 'import sys,sysconfig,os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"),"EXTERNALLY-MANAGED")))'; then
    pipflags+=(--break-system-packages)
  fi
  if [ -w "$("$PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" ]; then
    "$PY" -m pip install "${pipflags[@]}" "virtme-ng==$VIRTME_NG_VERSION"
  else
    as_root "$PY" -m pip install "${pipflags[@]}" "virtme-ng==$VIRTME_NG_VERSION"
  fi
  hash -r
  command -v pyenv >/dev/null && pyenv rehash 2>/dev/null || true
  if ! command -v vng >/dev/null; then say "vng not on PATH after installing virtme-ng"; exit 1; fi
  say "virtme-ng $(vng_version) installed: $(command -v vng)"
fi
say "done"
