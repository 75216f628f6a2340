#!/usr/bin/env bash
# Installs what `make fuzz` needs: rustup's nightly toolchain (cargo-fuzz
# builds with sanitizers and -Z flags), cargo-fuzz (pinned, from crates.io)
# and a C++ compiler (libfuzzer-sys compiles libFuzzer). Idempotent: a
# second run takes well under a second. Measured here, cold: the install
# about 1 minute, the first `make fuzz` build about 4 minutes (2 cores).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CARGO_FUZZ_VERSION="0.13.2"

log() { printf '[setup-fuzz] %s\n' "$*"; }
die() { printf '[setup-fuzz] error: %s\n' "$*" >&2; exit 1; }

CARGO_HOME_BIN="${CARGO_HOME:-$HOME/.cargo}/bin"
RUSTUP="$CARGO_HOME_BIN/rustup"
[[ -x "$RUSTUP" ]] || RUSTUP="$(command -v rustup || true)"
[[ -n "$RUSTUP" ]] || die "rustup not found"

# --- nightly ---------------------------------------------------------------
# Captured first: `| grep -q` could SIGPIPE rustup and fail under pipefail.
toolchains="$("$RUSTUP" toolchain list 2>/dev/null || true)"
if [[ "$toolchains" == *nightly* ]]; then
    log "nightly present: $("$RUSTUP" run nightly rustc --version)"
else
    log "rustup toolchain install nightly --profile minimal"
    "$RUSTUP" toolchain install nightly --profile minimal \
        || die "no nightly toolchain, and rustup could not install one"
fi

# --- a C++ compiler, for libFuzzer -------------------------------------------
if command -v c++ >/dev/null; then
    log "C++ compiler present: $(c++ --version | head -n1)"
else
    # shellcheck source=deb-packages.sh
    source "$REPO_ROOT/scripts/deb-packages.sh"
    ensure_deb_packages g++
fi

# --- cargo-fuzz ----------------------------------------------------------------
# `cargo install --list` prints "cargo-fuzz v0.13.2:" for an installed crate.
installed="$("$CARGO_HOME_BIN/cargo" install --list 2>/dev/null || true)"
if [[ -x "$CARGO_HOME_BIN/cargo-fuzz" && "$installed" == *"cargo-fuzz v${CARGO_FUZZ_VERSION}:"* ]]; then
    log "cargo-fuzz ${CARGO_FUZZ_VERSION} present"
else
    log "cargo install cargo-fuzz@${CARGO_FUZZ_VERSION} --locked (about 1 minute)"
    # Unset RUSTC so a caller's Debian RUSTC does not leak into this build.
    env -u RUSTC -u RUSTFLAGS "$CARGO_HOME_BIN/cargo" install "cargo-fuzz@${CARGO_FUZZ_VERSION}" --locked
fi

log "ready: cargo-fuzz ${CARGO_FUZZ_VERSION}, $("$RUSTUP" run nightly rustc --version)"
