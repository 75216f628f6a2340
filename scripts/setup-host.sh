#!/usr/bin/env bash
# Installs what the host builds need beyond Rust: clang and libclang-dev,
# which RocksDB's build (librocksdb-sys, under Agave's test validator in
# curta-localnet) uses to compile its C++ and generate its bindings.
# Idempotent: a second run takes well under a second.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEB_PACKAGES=(clang libclang-dev)

log() { printf '[setup-host] %s\n' "$*"; }
die() { printf '[setup-host] error: %s\n' "$*" >&2; exit 1; }

# shellcheck source=deb-packages.sh
source "$REPO_ROOT/scripts/deb-packages.sh"
ensure_deb_packages "${DEB_PACKAGES[@]}"
command -v clang >/dev/null || die "clang missing after install"
log "ready: $(clang --version | head -n1)"
