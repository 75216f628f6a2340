#!/usr/bin/env bash
# Installs the JavaScript packages' dependencies from their lockfiles
# (npm ci: exactly what package-lock.json records, from the npm registry).
# Skips a package whose node_modules is newer than its lockfile, so a
# second run takes well under a second.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACKAGES=(sdk web)

log() { printf '[setup-js] %s\n' "$*"; }
die() { printf '[setup-js] error: %s\n' "$*" >&2; exit 1; }

command -v npm >/dev/null || die "npm is missing (Node.js 20.18 or later is needed)"
for p in "${PACKAGES[@]}"; do
    dir="$REPO_ROOT/$p"
    stamp="$dir/node_modules/.package-lock.json"
    if [[ -f "$stamp" && "$stamp" -nt "$dir/package-lock.json" ]]; then
        log "$p: node_modules up to date"
        continue
    fi
    log "$p: npm ci"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
done
