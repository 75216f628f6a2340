# Sourced by the setup scripts: `ensure_deb_packages PKG...` installs the
# Debian packages that are missing, without "recommends", and does nothing
# (no apt call, well under a second) when all are there. The caller defines
# log() and die().

ensure_deb_packages() {
    local missing=() p cand need_update=0
    for p in "$@"; do
        if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]]; then
            missing+=("$p")
        fi
    done
    if ((${#missing[@]} == 0)); then
        log "Debian packages present: $*"
        return 0
    fi
    [[ $(id -u) -eq 0 ]] || die "need root to apt-get install: ${missing[*]}"
    log "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Only refresh the lists when apt cannot find a candidate for a package:
    # a fresh image has empty lists, a kept machine usually does not need it.
    for p in "${missing[@]}"; do
        cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
        if [[ -z "$cand" || "$cand" == "(none)" ]]; then need_update=1; break; fi
    done
    if ((need_update)); then
        log "apt-get update"
        apt-get update -q
    fi
    # --no-install-recommends: recommends are hundreds of MB (llvm-22 alone
    # recommends llvm-22-dev, clang-22 and more) that the builds do not use.
    if ! apt-get install -y -q --no-install-recommends "${missing[@]}"; then
        # Stale lists name package versions the mirror no longer has.
        ((need_update)) && die "apt-get install failed"
        log "install failed; apt-get update and retry"
        apt-get update -q
        apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
}
