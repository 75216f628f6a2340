#!/usr/bin/env bash
# Installs what the host builds need beyond Rust, for the C and C++ under
# Agave's test validator (curta-localnet): clang and libclang-dev, which
# compile RocksDB (librocksdb-sys) and generate its bindings; lld, the host
# linker (.cargo/config.toml); libssl-dev and pkg-config, the OpenSSL that
# openssl-sys links instead of building its own; protobuf-compiler, the
# protoc of patches/protobuf-src.
# Idempotent: a second run takes well under a second.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEB_PACKAGES=(clang libclang-dev lld libssl-dev pkg-config protobuf-compiler)

log() { printf '[setup-host] %s\n' "$*"; }
die() { printf '[setup-host] error: %s\n' "$*" >&2; exit 1; }

# shellcheck source=deb-packages.sh
source "$REPO_ROOT/scripts/deb-packages.sh"
ensure_deb_packages "${DEB_PACKAGES[@]}"
command -v clang >/dev/null || die "clang missing after install"
log "ready: $(clang --version | head -n1)"
