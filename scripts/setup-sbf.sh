#!/usr/bin/env bash
# Installs what the SBF (bpfel-unknown-none) and wasm32 builds need, on a fresh
# machine of this kind: Debian's rustc 1.96 (prebuilt core/alloc for bpfel),
# its std sources (for -Zbuild-std on wasm32), LLVM 22, and sbpf-linker 0.2.6
# built against LLVM 22 into target/sbpf-linker (the linker
# .cargo/config.toml names; it writes SBPF v3 by default, v0 with --arch=v0).
# Idempotent: every step checks first, so a second run takes well under a second.
# See docs/sbf.md for why this toolchain and not platform-tools.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# lld-22 is listed because we skip "recommends": rust-web-llvm's /usr/bin/rust-lld
# (the wasm32 linker) is only a link to lld-22, dangling without it.
DEB_PACKAGES=(rustc-web cargo-web libstd-rust-web-dev-bpf rust-web-src rust-web-llvm llvm-22 lld-22)
# The shared LLVM 22 library. /usr/lib/llvm-22/lib/libLLVM.so.1 is only a link
# shipped by llvm-22-dev (a 400 MB "recommends" we skip); the file itself
# comes with libllvm22, which llvm-22 depends on.
LLVM_LIB_CANDIDATES=(/usr/lib/llvm-22/lib/libLLVM.so.1 "/usr/lib/$(uname -m)-linux-gnu/libLLVM.so.22.1")

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

# --- sbpf-linker ---------------------------------------------------------------
# 0.2.6 writes SBPF v3. Its default feature selects bpf-linker's LLVM 23 and
# a runtime-loaded LLVM; without default features, with bpf-linker's
# `llvm-22` feature, it links LLVM 22's shared library at build time, found
# through LLVM_PREFIX/lib/libLLVM.so (llvm-22-dev, which would ship that
# link, is not installed). Built with rustup's cargo (`+stable` overrides the
# nightly the crate's rust-toolchain.toml names). No source is edited.
SBPF_LINKER_VERSION="0.2.6"
SBPF_LINKER_ROOT="$REPO_ROOT/target/sbpf-linker"
SBPF_LINKER="$SBPF_LINKER_ROOT/bin/sbpf-linker"
LLVM_PREFIX_DIR="$REPO_ROOT/target/sbf-llvm-prefix"
RUSTUP_CARGO="${CARGO_HOME:-$HOME/.cargo}/bin/cargo"
[[ -x "$RUSTUP_CARGO" ]] || RUSTUP_CARGO="$(command -v cargo || true)"
[[ -n "$RUSTUP_CARGO" && "$RUSTUP_CARGO" != /usr/bin/cargo ]] || die "rustup's cargo not found"

prefix_link="$LLVM_PREFIX_DIR/lib/libLLVM.so"
if [[ ! -L "$prefix_link" || "$(readlink "$prefix_link")" != "$LLVM_LIB" ]]; then
    log "creating $prefix_link -> $LLVM_LIB"
    rm -rf "$LLVM_PREFIX_DIR"
    mkdir -p "$LLVM_PREFIX_DIR/lib"
    ln -s "$LLVM_LIB" "$prefix_link"
fi
# `sbpf-linker --version` prints "sbpf-linker 0.2.6" then "LLVM 22.x.y".
linker_version() { "$SBPF_LINKER" --version 2>/dev/null || true; }
linker_ok() {
    local v
    v="$(linker_version)"
    [[ "$v" == *"sbpf-linker ${SBPF_LINKER_VERSION}"* && "$v" == *"LLVM 22."* ]]
}
if [[ -x "$SBPF_LINKER" ]] && linker_ok; then
    log "sbpf-linker ${SBPF_LINKER_VERSION} (LLVM 22) present: $SBPF_LINKER"
else
    log "cargo +stable install sbpf-linker@${SBPF_LINKER_VERSION} against LLVM 22 into $SBPF_LINKER_ROOT (about 1.5 CPU minutes)"
    # Unset RUSTC and the flags so a caller's Debian settings do not leak in.
    # --debug: the linking is done by Debian's optimized libLLVM; the
    # linker's own Rust unoptimized writes the same bytes (docs/sbf.md).
    env -u RUSTC -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS LLVM_PREFIX="$LLVM_PREFIX_DIR" \
        "$RUSTUP_CARGO" +stable install "sbpf-linker@${SBPF_LINKER_VERSION}" --locked --debug \
        --no-default-features --features bpf-linker/llvm-22 --root "$SBPF_LINKER_ROOT"
    linker_ok || die "$SBPF_LINKER --version says: $(linker_version)"
fi

log "ready: $(/usr/bin/rustc --version), $(linker_version | head -n1) on $(linker_version | sed -n 2p)"
exit 0
