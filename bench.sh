#!/usr/bin/env bash
# tinygrad-emu setup + entry point. Idempotent: a second run only re-installs what changed.
#   ./bench.sh demo [ARGS]   set up, then run the demo (python -m mockgpu.demo ARGS)
#   ./bench.sh test [ARGS]   set up, then run the whole test suite (pytest ARGS)
#   ./bench.sh setup         set up only
# Environment: PYTHON (interpreter to build the venv from, default python3), VENV (default .venv beside this script),
#   EMU_SKIP_APT=1 (never call apt-get), EMU_JOBS (pytest workers, default: number of cores).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
venv="${VENV:-$here/.venv}"
py="${PYTHON:-python3}"
say() { printf '[bench] %s\n' "$*" >&2; }

as_root() {  # run a command as root: directly, through passwordless sudo, or not at all
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo "$@"; else return 1; fi
}

apt_updated=0
apt_update() {  # apt-get update once per run
  [ "${EMU_SKIP_APT:-0}" = 1 ] && return 1
  command -v apt-get >/dev/null || return 1
  [ $apt_updated = 1 ] || { as_root apt-get update -qq >/dev/null && apt_updated=1; }
}
apt_install() {  # apt_install PKG...: install the Debian/Ubuntu packages that this apt knows; report the rest
  apt_update || return 1
  local have=()
  for p in "$@"; do apt-cache show "$p" >/dev/null 2>&1 && have+=("$p") || say "apt has no package $p here"; done
  [ ${#have[@]} -gt 0 ] && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${have[@]}" >/dev/null
}

setup_system() {
  # libLLVM: 19 compiles gfx1100/gfx1201/gfx942; gfx950 needs >= 20: the newest libllvmN (N >= 20) apt has, when none is installed
  # (Debian bookworm ships libllvm22 in its security updates); without one, gfx950's tests skip and say why
  local libdir="/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)" missing=() v newer=""
  has_llvm() { ls "$libdir"/libLLVM-"$1".so* >/dev/null 2>&1 || ls "$libdir"/libLLVM.so."$1"* >/dev/null 2>&1; }
  has_llvm 19 || missing+=(libllvm19)
  for v in $(seq 30 -1 20); do has_llvm "$v" && { newer=$v; break; }; done
  if [ -z "$newer" ] && apt_update; then
    for v in $(seq 30 -1 20); do apt-cache show "libllvm$v" >/dev/null 2>&1 && { missing+=("libllvm$v"); newer=$v; break; }; done
  fi
  [ -n "$newer" ] || say "no libLLVM >= 20 installed or in apt: gfx950 (MOCKKFD+AMD:LLVM:gfx950) cannot compile kernels; its tests skip"
  command -v clang >/dev/null || missing+=(clang)   # tinygrad's CPU device (used for host-side copies of multi-GPU tensors) needs it
  command -v qemu-x86_64 >/dev/null || missing+=(qemu-user)  # the x86 fuzz target runs the x86 renderer's AVX code in QEMU >= 7.2
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]} (tinygrad's kernel compilers, its CPU device's clang, QEMU for the x86 fuzz target)"
    apt_install "${missing[@]}" || say "could not install ${missing[*]}: run as root: apt-get update && apt-get install -y ${missing[*]}" \
      "  (without them tinygrad cannot compile kernels for those devices and the x86 fuzz target falls back to unicorn;" \
      "  'python -m mockgpu doctor' tells what works)"
  fi
}

setup_python() {
  "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null || { say "need Python >= 3.11 (set PYTHON=/path/to/python3.11+)"; exit 1; }
  if [ ! -x "$venv/bin/python" ]; then
    say "creating virtualenv $venv"
    "$py" -m venv "$venv" 2>/dev/null || { apt_install python3-venv && "$py" -m venv "$venv"; } \
      || { say "cannot create a virtualenv: install python3-venv (apt-get install -y python3-venv)"; exit 1; }
  fi
  local stamp="$venv/.tinygrad-emu-installed" want
  want="$(cat pyproject.toml setup.py tinygrad_emu_hook.pth | sha256sum | cut -c1-16)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing tinygrad-emu and its pinned dependencies into $venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    "$venv/bin/python" -m pip install -q -e ".[dev]"
    echo "$want" > "$stamp"
  fi
}

cmd="${1:-demo}"; [ $# -gt 0 ] && shift
setup_system
setup_python
export PATH="$venv/bin:$PATH"
case "$cmd" in
  setup) say "ready: . $venv/bin/activate";;
  demo) exec "$venv/bin/python" -m mockgpu.demo "$@";;
  test) exec "$venv/bin/python" -m pytest -n "${EMU_JOBS:-$(nproc 2>/dev/null || echo 2)}" "$@";;
  *) say "unknown command '$cmd' (demo, test, setup)"; exit 2;;
esac
