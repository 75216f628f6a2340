#!/usr/bin/env bash
# Installs what the SBF (bpfel-unknown-none) and wasm32 builds need, on a fresh
# machine of this kind: Debian's rustc 1.96 (prebuilt core/alloc for bpfel),
# its std sources (for -Zbuild-std on wasm32), LLVM 22, and sbpf-linker 0.1.9.
# Idempotent: every step checks first, so a second run takes well under a second.
# See docs/sbf.md for why this toolchain and not platform-tools.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SBPF_LINKER_VERSION="0.1.9"   # later versions need LLVM 23
# lld-22 is listed because we skip "recommends": rust-web-llvm's /usr/bin/rust-lld
# (the wasm32 linker) is only a link to lld-22, dangling without it.
DEB_PACKAGES=(rustc-web cargo-web libstd-rust-web-dev-bpf rust-web-src rust-web-llvm llvm-22 lld-22)
# The shared LLVM 22 library. /usr/lib/llvm-22/lib/libLLVM.so.1 is only a link
# shipped by llvm-22-dev (a 400 MB "recommends" we skip); the file itself
# comes with libllvm22, which llvm-22 depends on.
LLVM_LIB_CANDIDATES=(/usr/lib/llvm-22/lib/libLLVM.so.1 "/usr/lib/$(uname -m)-linux-gnu/libLLVM.so.22.1")
# sbpf-linker dlopen()s the first libLLVM* on LD_LIBRARY_PATH: a folder with
# only this one link keeps it from picking some other LLVM.
LLVM_LINK_DIR="$REPO_ROOT/target/sbf-llvm"

log() { printf '[setup-sbf] %s\n' "$*"; }
die() { printf '[setup-sbf] error: %s\n' "$*" >&2; exit 1; }

# --- Debian packages -------------------------------------------------------
# shellcheck source=deb-packages.sh
source "$REPO_ROOT/scripts/deb-packages.sh"
ensure_deb_packages "${DEB_PACKAGES[@]}"
[[ -x /usr/bin/rustc && -x /usr/bin/cargo ]] || die "/usr/bin/rustc or /usr/bin/cargo missing after install"
LLVM_LIB=""
for f in "${LLVM_LIB_CANDIDATES[@]}"; do
    if [[ -e "$f" ]]; then LLVM_LIB="$f"; break; fi
done
[[ -n "$LLVM_LIB" ]] || die "no libLLVM 22 found (looked at: ${LLVM_LIB_CANDIDATES[*]})"
[[ -x /usr/bin/rust-lld ]] || die "/usr/bin/rust-lld is missing or a dangling link (lld-22)"
[[ -d /usr/lib/rustlib/bpfel-unknown-none/lib ]] || die "no prebuilt bpfel-unknown-none libs (libstd-rust-web-dev-bpf)"

# --- sbpf-linker -------------------------------------------------------------
# Installed with rustup's cargo (the machine's own toolchain) into
# ~/.cargo/bin, where the Makefile looks for it.
CARGO_HOME_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
RUSTUP_CARGO="$CARGO_HOME_BIN/cargo"
[[ -x "$RUSTUP_CARGO" ]] || RUSTUP_CARGO="$(command -v cargo || true)"
[[ -n "$RUSTUP_CARGO" && "$RUSTUP_CARGO" != /usr/bin/cargo ]] || die "rustup's cargo not found"
# `cargo install --list` prints "sbpf-linker v0.1.9:" for an installed crate.
# Captured first: `| grep -q` could SIGPIPE cargo and fail under pipefail.
installed="$("$RUSTUP_CARGO" install --list 2>/dev/null || true)"
if [[ -x "$CARGO_HOME_BIN/sbpf-linker" && "$installed" == *"sbpf-linker v${SBPF_LINKER_VERSION}:"* ]]; then
    log "sbpf-linker ${SBPF_LINKER_VERSION} present"
else
    log "cargo install sbpf-linker@${SBPF_LINKER_VERSION} --locked (about 1.5 minutes)"
    # Unset RUSTC so a caller's Debian RUSTC does not leak into this build.
    env -u RUSTC -u RUSTFLAGS "$RUSTUP_CARGO" install "sbpf-linker@${SBPF_LINKER_VERSION}" --locked
fi

# --- libLLVM link folder -----------------------------------------------------
link="$LLVM_LINK_DIR/libLLVM-22.so"
if [[ -L "$link" && "$(readlink "$link")" == "$LLVM_LIB" ]]; then
    log "LLVM link present: $link"
else
    log "creating $link -> $LLVM_LIB"
    rm -rf "$LLVM_LINK_DIR"
    mkdir -p "$LLVM_LINK_DIR"
    ln -s "$LLVM_LIB" "$link"
fi

log "ready: $(/usr/bin/rustc --version), sbpf-linker ${SBPF_LINKER_VERSION}, LD_LIBRARY_PATH=$LLVM_LINK_DIR"
