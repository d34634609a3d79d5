#!/usr/bin/env bash
# Reproduces every number of BENCHMARKS.md in one go:
#   1. builds mcp-bench (binary and criterion benches), the testkit's stdio server
#      (mcp-testkit-stdio, which the stdio cases start) and mcp-call (which the whole-process
#      rows and the overrun run as a whole process) in release,
#   2. runs the criterion parsing benchmarks (benches/parse.rs) and the outputSchema ones
#      (benches/schema.rs),
#   3. runs `mcp-bench run`: the server ceiling, the network cases (both eras over HTTP,
#      and stdio), the cross-SDK cases
#      (the drivers, rmcp, the TypeScript SDK and the Python SDK, a client process each),
#      the memory cases, the whole-process rows against rmcp's own server (`mcp-bench
#      serve-rmcp`, rmcp 3.11's StreamableHttpService: for each era, 5 paired rounds of
#      `mcp-call --driver blocking|tokio --repeat 8000 call echo` and the bare floor
#      `mcp-bench floor-child` posting the same bytes, one process at a time: about a minute;
#      `--whole-calls N`, `--whole-rounds R` to choose, `--only whole` to run them alone with
#      `mcp-bench run`), then the overrun past a 2 s budget against a stalled server
#      (inside the operation and as the whole mcp-call process, 20 runs a row: about 4 minutes),
#   4. writes the tables into BENCHMARKS.md between the result markers
#      (or prints them with --print),
#   5. runs bench/bridge.sh: `mcp-call bridge` beside mcp-remote under the hosts' own client
#      libraries (its table between the bridge markers; left out with --no-sdks).
#
# Usage: bench/run.sh [--print] [--quick] [extra `mcp-bench run` options...]
#   --print   print the tables instead of writing BENCHMARKS.md
#   --quick   shorter windows (1 s per case instead of 2 s), 5 overrun runs a row instead
#             of 20, and whole-process rows of 2000 calls in 3 rounds instead of 8000 in 5:
#             a smoke run, not for the record
#
# The cross-SDK cases need the SDKs interop/install.sh installs into $INTEROP_HOME (default
# ~/.cache/mcp-interop): `interop/install.sh && bench/run.sh`. Without them the run fails at
# once, naming that step (`--no-sdks` leaves the cross-SDK table out instead).
# Takes about 22 minutes on a 2-core machine (about 7 of them the build, with LTO; 4 the overrun,
# 1 the whole-process rows).
# `wrk` (apt-get install -y wrk), when installed, adds a row to the server-ceiling table.
# Not run here: bench/footprint.py (needs valgrind) counts the code one warm call touches,
# by crate and function (BENCHMARKS.md, "The per-call path"); bench/pgo.sh (needs
# llvm-profdata) measures the whole-process and stdio rows with profile-guided builds of the
# client and its floors alike (BENCHMARKS.md, "Profile-guided builds").
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
print=0
secs=2
quick=()
extra=()
for arg in "$@"; do
    case "$arg" in
        --print) print=1 ;;
        --quick) secs=1; quick=(--overrun-runs 5 --whole-calls 2000 --whole-rounds 3) ;;
        *) extra+=("$arg") ;;
    esac
done

# The SDKs of the cross-SDK cases, checked before the build so that a missing one fails now
# (mcp-bench checks again, before it measures anything, where --interop-home points).
export INTEROP_HOME="${INTEROP_HOME:-$HOME/.cache/mcp-interop}"
case " ${extra[*]-} " in
    *" --no-sdks "* | *" --interop-home "*) ;;
    *)
        for peer in "$INTEROP_HOME/npm/node_modules/@modelcontextprotocol/sdk/package.json" \
            "$INTEROP_HOME/venv-mcp/bin/python"; do
            if [ ! -e "$peer" ]; then
                echo "bench/run.sh: $peer is missing: run interop/install.sh first (or pass --no-sdks)" >&2
                exit 1
            fi
        done
        if ! command -v node >/dev/null; then
            echo "bench/run.sh: node is not on PATH: the TypeScript SDK's client needs it (see interop/install.sh)" >&2
            exit 1
        fi
        ;;
esac

target=${CARGO_TARGET_DIR:-$root/target}
started=$(date +%s)
ulimit -n 65536 2>/dev/null || true

echo "== build (release)" >&2
build_start=$(date +%s)
cargo build --release -p mcp-bench --bins --benches >&2
# The stdio cases' server, found next to mcp-bench (mcp_testkit::stdio_server_path).
cargo build --release -p mcp-testkit --bin mcp-testkit-stdio >&2
# The whole-process rows and the overrun's run mcp-call, found next to mcp-bench.
cargo build --release -p mcp-call --bin mcp-call >&2
build_secs=$(( $(date +%s) - build_start ))

echo "== parsing benchmarks (criterion)" >&2
rm -rf "$target/criterion"/parse-* "$target/criterion"/sansio-* "$target/criterion"/output-schema
cargo bench -p mcp-bench --bench parse >&2
# Compiling and checking the forecast tool's outputSchema alone (quoted by hand in the
# "Output validation" section of BENCHMARKS.md, beside the validated/unvalidated rows).
cargo bench -p mcp-bench --bench schema >&2

echo "== server ceiling, network, memory, whole-process and overrun cases" >&2
tables=$(mktemp)
trap 'rm -f "$tables"' EXIT
"$target/release/mcp-bench" run --secs "$secs" ${quick[@]+"${quick[@]}"} --criterion "$target/criterion" --out "$tables" ${extra[@]+"${extra[@]}"}

total_secs=$(( $(date +%s) - started ))
{
    echo "Run of $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (with local changes)'), $(rustc --version)."
    echo "Command: \`$(echo "bench/run.sh $*" | sed 's/ *$//')\` (build ${build_secs} s, whole run ${total_secs} s)."
    echo "CPU model (\`lscpu\`): $(lscpu | sed -n 's/^Model name:[[:space:]]*//p'); \`nproc\`: $(nproc)."
    echo
    cat "$tables"
} > "$tables.doc"
mv "$tables.doc" "$tables"

if [ "$print" = 1 ]; then
    cat "$tables"
    case " ${extra[*]-} " in *" --no-sdks "*) ;; *) bench/bridge.sh --print ;; esac
    exit 0
fi

doc="$root/BENCHMARKS.md"
begin='<!-- results:begin -->'
end='<!-- results:end -->'
if ! grep -q "$begin" "$doc" 2>/dev/null; then
    printf '# Benchmarks\n\n%s\n%s\n' "$begin" "$end" >> "$doc"
fi
awk -v begin="$begin" -v end="$end" -v tables="$tables" '
    $0 == begin { print; while ((getline line < tables) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
' "$doc" > "$doc.new"
mv "$doc.new" "$doc"
echo "== wrote the tables into $doc (${total_secs} s)" >&2

# The bridge beside mcp-remote, under the hosts' own libraries (its own table and markers).
case " ${extra[*]-} " in
    *" --no-sdks "*) ;;
    *) bench/bridge.sh ;;
esac
