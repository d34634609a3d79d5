#!/usr/bin/env bash
# Runs every fuzz target (the [[bin]]s of fuzz/Cargo.toml) for SECONDS each (default 60) with
# cargo-fuzz on a nightly toolchain, then prints, per target, the executions and the number of
# crashes.
#
#   fuzz/run.sh 60            # all targets, 60 s each
#   fuzz/run.sh 300 operation # one target
#   FUZZ_ARGS='-len_control=0' fuzz/run.sh 300 auth   # more libFuzzer flags, appended
#
# The committed seeds (fuzz/corpus/<target>/) are copied into a scratch corpus under
# fuzz/target/corpus/<target>/ and fuzzed there, so corpus growth is never committed.
# Crashes land in fuzz/artifacts/<target>/ (git-ignored); on a crash this script prints the
# panic and each new crashing input in hex, so a CI log alone is enough to reproduce it
# (write the bytes back with `xxd -r -p`). Replay one with
#   cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>
# and, once the bug is fixed, keep the input in fuzz/regressions/<target>/ (see its README).
#
# Needs: rustup (a nightly toolchain is installed with `rustup toolchain install nightly
# --profile minimal` when missing) and cargo-fuzz (installed with `cargo install cargo-fuzz`
# when missing). Exits non-zero when a target crashed or could not be built or run.
set -euo pipefail

seconds="${1:-60}"
shift || true
targets=("$@")
case "$seconds" in
  '' | *[!0-9]*) echo "usage: fuzz/run.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

fuzz_dir="$(cd "$(dirname "$0")" && pwd)"
cd "$fuzz_dir/.."

if ! command -v rustup >/dev/null 2>&1; then
  echo "fuzz/run.sh: rustup is not installed; cargo-fuzz needs a nightly toolchain from rustup" >&2
  exit 1
fi
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  echo "fuzz/run.sh: installing the nightly toolchain (rustup toolchain install nightly --profile minimal)"
  if ! rustup toolchain install nightly --profile minimal; then
    echo "fuzz/run.sh: FAILED: no nightly toolchain and it cannot be installed on this machine;" >&2
    echo "  libFuzzer needs nightly (-Zsanitizer). The stable replay of the corpus still runs in" >&2
    echo "  'cargo test -p mcp-fuzzing --test corpus_replay'." >&2
    exit 1
  fi
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "fuzz/run.sh: installing cargo-fuzz (cargo install cargo-fuzz)"
  if ! cargo install cargo-fuzz; then
    echo "fuzz/run.sh: FAILED: cargo-fuzz is missing and could not be installed" >&2
    exit 1
  fi
fi

if [ "${#targets[@]}" -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir "$fuzz_dir")
fi

# No sanitizer: the code under test and the targets forbid unsafe code, and without ASan the
# targets run about ten times faster. Debug assertions on: an arithmetic overflow is a crash too.
flags=(--sanitizer none --debug-assertions)
# FUZZ_ARGS: more libFuzzer flags, split on spaces.
read -r -a extra <<<"${FUZZ_ARGS:-}"

echo "fuzz/run.sh: building the targets ($(rustup run nightly rustc --version))"
cargo +nightly fuzz build "${flags[@]}" --fuzz-dir "$fuzz_dir" >/dev/null

status=0
summary=()
for target in "${targets[@]}"; do
  seeds="$fuzz_dir/corpus/$target"
  scratch="$fuzz_dir/target/corpus/$target"
  artifacts="$fuzz_dir/artifacts/$target"
  log="$fuzz_dir/target/fuzz-$target.log"
  mkdir -p "$scratch" "$artifacts"
  [ -d "$seeds" ] && cp -n "$seeds"/* "$scratch"/ 2>/dev/null || true
  before=$(find "$artifacts" -type f | sort)
  echo "fuzz/run.sh: fuzzing $target for ${seconds}s (log: ${log#"$PWD"/})"
  set +e
  # The first crash stops this target's run, so its artifact is the first failing input.
  # -timeout: one input running over 10 s (a hang) is a crash too.
  cargo +nightly fuzz run "${flags[@]}" --fuzz-dir "$fuzz_dir" "$target" "$scratch" -- \
    -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" "${extra[@]}" >"$log" 2>&1
  code=$?
  set -e
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n1)
  execs="${execs:-?}"
  after=$(find "$artifacts" -type f | sort)
  new=$(comm -13 <(printf '%s\n' "$before" | sed '/^$/d') <(printf '%s\n' "$after" | sed '/^$/d'))
  crashes=$(printf '%s\n' "$new" | sed '/^$/d' | wc -l)
  summary+=("$(printf '%-10s executions: %-10s new crashes: %s (artifacts in fuzz/artifacts/%s: %s)' \
    "$target" "$execs" "$crashes" "$target" "$(printf '%s\n' "$after" | sed '/^$/d' | wc -l)")")
  if [ "$code" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    status=1
    echo "fuzz/run.sh: $target FAILED (exit $code); the panic:" >&2
    # The whole panic message (an assert_eq! spans several lines), up to the backtrace note.
    awk '/panicked at/ { on = 1 } on && /^(note: |stack backtrace:|==[0-9]+==)/ { exit } on { print }' \
      "$log" | head -n 40 >&2 || true
    grep -E "Test unit written|ERROR: libFuzzer|SUMMARY: libFuzzer" "$log" | head -n 4 >&2 || true
    while IFS= read -r input; do
      [ -n "$input" ] || continue
      echo "fuzz/run.sh: the input, ${input#"$PWD"/} ($(wc -c <"$input") bytes), in hex:" >&2
      od -An -v -tx1 "$input" | sed 's/^ */  /' >&2
    done <<<"$new"
  fi
done

echo
echo "fuzz/run.sh: summary (${seconds}s per target)"
printf '  %s\n' "${summary[@]}"
exit "$status"
