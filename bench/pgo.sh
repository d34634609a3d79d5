#!/usr/bin/env bash
# Profile-guided builds, like for like: what the per-call rows read when the compiler lays
# out the code by a profile, for the client AND its floor.
#
#   1. builds mcp-call and mcp-bench instrumented (-Cprofile-generate) into target/pgo; the
#      floors (`mcp-bench floor-child`, the bare pipes) live in mcp-bench, so they are
#      instrumented and trained exactly as the drivers are;
#   2. trains both on the rows they are measured by: the whole-process rows against rmcp's
#      server (2 rounds of 3000 calls) and the stdio rows;
#   3. merges the profiles and rebuilds both with them (-Cprofile-use);
#   4. runs `mcp-bench run --only whole` and `--only stdio` from the profiled build and
#      prints the tables (BENCHMARKS.md is never written: the record is bench/run.sh's).
#
# Why: a warm call against a fast server pays for every line of code it touches, because
# the server's work between two calls evicts the client's code (BENCHMARKS.md, "The per-call
# path (issue 44)"). A profile puts the hot paths together and the cold ones aside, which is
# most of what separates a default build from its floor.
#
# Usage: bench/pgo.sh [extra `mcp-bench run` options...]
# Needs llvm-profdata of rustc's LLVM version (`llvm-profdata-NN` on PATH, e.g. Debian's
# llvm-NN package, or rustup's llvm-tools component). Takes about 15 minutes on 2 cores (two
# LTO builds).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$(pwd)
major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
profdata=""
for candidate in "llvm-profdata-$major" \
    "$(rustc --print sysroot)/lib/rustlib/$(rustc -vV | sed -n 's/^host: //p')/bin/llvm-profdata" \
    llvm-profdata; do
    if command -v "$candidate" >/dev/null 2>&1 \
        && "$candidate" merge --version 2>/dev/null | grep -q "LLVM version $major\."; then
        profdata=$candidate
        break
    fi
done
if [ -z "$profdata" ]; then
    echo "bench/pgo.sh: no llvm-profdata of LLVM $major (rustc's): install llvm-$major or rustup's llvm-tools" >&2
    exit 1
fi

target=$root/target/pgo
profiles=$target/profiles
rm -rf "$profiles"
mkdir -p "$profiles"

# The stdio rows' server is not part of the comparison: an ordinary release build.
cargo build --release -p mcp-testkit --bin mcp-testkit-stdio >&2
export MCP_TESTKIT_STDIO_BIN=${CARGO_TARGET_DIR:-$root/target}/release/mcp-testkit-stdio

echo "== instrumented build" >&2
CARGO_TARGET_DIR=$target RUSTFLAGS="-Cprofile-generate=$profiles/raw" \
    cargo build --release -p mcp-call -p mcp-bench --bins >&2

# Only the rows this script measures, in training and after it.
rows=(--no-overrun --no-memory --no-sdks --no-ceiling)

echo "== training" >&2
"$target/release/mcp-bench" run --only whole --no-network --whole-rounds 2 --whole-calls 3000 \
    "${rows[@]}" >/dev/null
"$target/release/mcp-bench" run --only stdio "${rows[@]}" >/dev/null
"$profdata" merge -o "$profiles/merged.profdata" "$profiles/raw"

echo "== profiled build" >&2
CARGO_TARGET_DIR=$target RUSTFLAGS="-Cprofile-use=$profiles/merged.profdata" \
    cargo build --release -p mcp-call -p mcp-bench --bins >&2

echo "== measured (profiled builds, client and floors alike)" >&2
"$target/release/mcp-bench" run --only whole --no-network "${rows[@]}" "$@"
"$target/release/mcp-bench" run --only stdio "${rows[@]}" "$@"
