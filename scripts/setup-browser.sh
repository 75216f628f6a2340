#!/usr/bin/env bash
# Installs what `make test-browser` needs beyond Node: Debian's Chromium,
# which playwright-core drives headless at /usr/bin/chromium (nothing
# downloads a browser of its own). Idempotent: a second run takes well under
# a second.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEB_PACKAGES=(chromium)

log() { printf '[setup-browser] %s\n' "$*"; }
die() { printf '[setup-browser] error: %s\n' "$*" >&2; exit 1; }

# shellcheck source=deb-packages.sh
source "$REPO_ROOT/scripts/deb-packages.sh"
ensure_deb_packages "${DEB_PACKAGES[@]}"
[[ -x /usr/bin/chromium ]] || die "/usr/bin/chromium missing after install"
log "ready: $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
