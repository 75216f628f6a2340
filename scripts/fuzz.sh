#!/usr/bin/env bash
# Runs the fuzz targets (all, or those named) for FUZZ_SECONDS each (60 by
# default) and prints each one's executions and coverage. Exits non-zero
# when any target finds a crash: its reproducer is then in
# target/fuzz/artifacts/<target>/, and its log in target/fuzz/logs/.
#
# Each run starts from the committed corpus (fuzz/corpus/<target>/) and the
# crash reproducers (fuzz/regressions/<target>/), and writes what it finds
# to target/fuzz/corpus/<target>/, so the committed files stay as they are.
# FUZZ_JOBS targets run at once (the number of CPUs by default).
# Used by `make fuzz FUZZ_SECONDS=N [FUZZ_TARGETS="a b"] [FUZZ_JOBS=J]`.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_EACH="${FUZZ_SECONDS:-60}"
ALL=(artifact state protocol wasm_exports cut_invariance program)
if (($#)); then TARGETS=("$@"); else TARGETS=("${ALL[@]}"); fi
WORK="$ROOT/target/fuzz"
CARGO="${CARGO_HOME:-$HOME/.cargo}/bin/cargo"
[[ -x "$CARGO" ]] || CARGO=cargo

# rustup's cargo with nightly; a Debian RUSTC or RUSTFLAGS must not leak in.
fuzz() { env -u RUSTC -u RUSTFLAGS -u CARGO_ENCODED_RUSTFLAGS "$CARGO" +nightly fuzz "$@"; }

cd "$ROOT/fuzz" || exit 1
start=$(date +%s)
if ! fuzz build; then
    echo "[fuzz] the fuzz targets do not build" >&2
    exit 1
fi
echo "[fuzz] built in $(($(date +%s) - start)) s; ${SECONDS_EACH} s per target"

# One target's run; prints its summary line to $WORK/logs/<target>.summary.
run_target() {
    local t=$1 log="$WORK/logs/$1.log" rc status execs cov
    mkdir -p "$WORK/corpus/$t" "$WORK/artifacts/$t"
    local dirs=("$WORK/corpus/$t")
    for d in "$ROOT/fuzz/corpus/$t" "$ROOT/fuzz/regressions/$t"; do
        [[ -d "$d" ]] && dirs+=("$d")
    done
    echo "[fuzz] $t for ${SECONDS_EACH} s (log: ${log#"$ROOT"/})"
    fuzz run "$t" "${dirs[@]}" -- \
        -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=3072 \
        -artifact_prefix="$WORK/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1
    rc=$?
    # libFuzzer's last status line ("#N DONE cov: C ft: F corp: ...") and
    # its final count of executions.
    status="$(grep -E '^#[0-9]+' "$log" | tail -n1)"
    execs="$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}')"
    cov="$(sed -nE 's/.* cov: ([0-9]+) ft: ([0-9]+).*/cov \1, ft \2/p' <<<"$status")"
    if ((rc != 0)); then
        echo "$t: FAILED (exit $rc), ${execs:-?} executions, ${cov:-no coverage line}" >"$WORK/logs/$t.summary"
        # What failed (the panic, or libFuzzer's and the sanitizer's
        # verdict) and where the input was written; the stack is in the log.
        {
            echo "[fuzz] $t FAILED (${log#"$ROOT"/}):"
            grep -m1 -A3 -E 'panicked at|ERROR: (libFuzzer|AddressSanitizer)' "$log"
            grep -E '^SUMMARY:|Test unit written to|^Base64:' "$log"
        } >&2
    else
        echo "$t: ${execs:-?} executions, ${cov:-no coverage line}" >"$WORK/logs/$t.summary"
    fi
    return "$rc"
}

# FUZZ_JOBS targets at a time (one per CPU by default): each is one process
# on one core.
mkdir -p "$WORK/logs"
jobs_max="${FUZZ_JOBS:-$(nproc)}"
failed=()
declare -A pid_of
for t in "${TARGETS[@]}"; do
    while (($(jobs -rp | wc -l) >= jobs_max)); do wait -n || true; done
    rm -f "$WORK/logs/$t.summary"
    run_target "$t" &
    pid_of[$t]=$!
done
for t in "${TARGETS[@]}"; do
    wait "${pid_of[$t]}" || failed+=("$t")
done

echo "[fuzz] summary (${SECONDS_EACH} s each, ${jobs_max} at a time):"
for t in "${TARGETS[@]}"; do
    echo "  $(cat "$WORK/logs/$t.summary" 2>/dev/null || echo "$t: no summary")"
done
if ((${#failed[@]})); then
    echo "[fuzz] crashes in: ${failed[*]}; reproducers in target/fuzz/artifacts/" >&2
    exit 1
fi
