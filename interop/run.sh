#!/usr/bin/env bash
# The interop matrix: every interop/rows/*.sh on both drivers against the real peers that
# install.sh brings in. Builds nothing: MCP_CALL (default target/release/mcp-call) must exist.
#
#   interop/run.sh [ROW...]        every row, or only the named ones (with or without .sh)
#
# Environment: MCP_CALL; MCP_TYPED_CALL (default target/release/mcp-typed-call, for the
# structured-output row: cargo build --release --bins); INTEROP_HOME (default
# $HOME/.cache/mcp-interop); INTEROP_JOBS, rows run
# at once (default 2); INTEROP_ROW_TIMEOUT, seconds before a row is stopped (default 240);
# INTEROP_LOGS, a folder to keep each row's output in. Prints a table (row, driver, result,
# seconds), every FAIL line, and `interop: N passed, M failed`; exits 1 on any failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
export INTEROP_DIR="$root/interop"
export INTEROP_HOME="${INTEROP_HOME:-$HOME/.cache/mcp-interop}"
MCP_CALL="${MCP_CALL:-$root/target/release/mcp-call}"
case $MCP_CALL in /*) ;; *) MCP_CALL="$PWD/$MCP_CALL" ;; esac
export MCP_CALL
# The typed client of the structured-output row (tests/src/bin/mcp-typed-call.rs).
MCP_TYPED_CALL="${MCP_TYPED_CALL:-$root/target/release/mcp-typed-call}"
case $MCP_TYPED_CALL in /*) ;; *) MCP_TYPED_CALL="$PWD/$MCP_TYPED_CALL" ;; esac
export MCP_TYPED_CALL
jobs_max="${INTEROP_JOBS:-2}"
row_timeout="${INTEROP_ROW_TIMEOUT:-240}"

[ -x "$MCP_CALL" ] || { echo "interop: no mcp-call at $MCP_CALL (build it: cargo build --release -p mcp-call)" >&2; exit 2; }

rows=()
if [ $# -eq 0 ]; then
  for file in "$INTEROP_DIR"/rows/*.sh; do rows+=("$(basename "$file" .sh)"); done
else
  for name in "$@"; do
    name=${name%.sh}
    [ -f "$INTEROP_DIR/rows/$name.sh" ] || { echo "interop: no row $name in $INTEROP_DIR/rows" >&2; exit 2; }
    rows+=("$name")
  done
fi

"$INTEROP_DIR/install.sh"

# The ports handed to the rows' peers (peers/free_port.py): none twice in one run.
INTEROP_PORTS=$(mktemp "${TMPDIR:-/tmp}/interop-ports.XXXXXX")
export INTEROP_PORTS
temporary=("$INTEROP_PORTS")
logs="${INTEROP_LOGS:-}"
if [ -n "$logs" ]; then mkdir -p "$logs"; else logs=$(mktemp -d); temporary+=("$logs"); fi
trap 'rm -rf "${temporary[@]}"' EXIT

runs=()
for row in "${rows[@]}"; do runs+=("$row blocking" "$row tokio"); done

declare -A running=() # pid -> "row driver"
stop_all() {
  local pid
  for pid in "${!running[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
  exit 130
}
trap stop_all INT TERM

# Runs one row on one driver; its output, exit code and seconds go to $logs/<row>.<driver>.*
run_one() {
  local row=$1 driver=$2 start=$SECONDS rc=0
  DRIVER=$driver timeout -s TERM -k 10 "$row_timeout" bash "$INTEROP_DIR/rows/$row.sh" \
    >"$logs/$row.$driver.log" 2>&1 </dev/null || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "FAIL row finishes: stopped after ${row_timeout}s" >>"$logs/$row.$driver.log"
  fi
  echo "$rc" >"$logs/$row.$driver.rc"
  echo $((SECONDS - start)) >"$logs/$row.$driver.seconds"
}

matrix_start=$SECONDS
for run in "${runs[@]}"; do
  while [ "${#running[@]}" -ge "$jobs_max" ]; do
    wait -n || true
    for pid in "${!running[@]}"; do kill -0 "$pid" 2>/dev/null || unset "running[$pid]"; done
  done
  read -r row driver <<<"$run"
  run_one "$row" "$driver" &
  running[$!]="$run"
  echo "interop: started $row on $driver" >&2
done
wait || true
total=$((SECONDS - matrix_start))

passed=0 failed=0
printf '\n%-28s %-9s %-6s %s\n' row driver result seconds
for run in "${runs[@]}"; do
  read -r row driver <<<"$run"
  rc=$(cat "$logs/$row.$driver.rc" 2>/dev/null || echo 1)
  # A row passes when it exits 0 and printed no FAIL line.
  if [ "$rc" = 0 ] && ! grep -q '^FAIL ' "$logs/$row.$driver.log"; then
    result=ok passed=$((passed + 1))
  else
    result=FAIL failed=$((failed + 1))
  fi
  printf '%-28s %-9s %-6s %s\n' "$row" "$driver" "$result" "$(cat "$logs/$row.$driver.seconds" 2>/dev/null || echo -)"
done
printf '%-28s %-9s %-6s %s\n' "(matrix, $jobs_max at a time)" "" "" "$total"

if [ "$failed" -gt 0 ]; then
  echo
  echo "failing checks:"
  for run in "${runs[@]}"; do
    read -r row driver <<<"$run"
    rc=$(cat "$logs/$row.$driver.rc" 2>/dev/null || echo 1)
    fails=$(grep '^FAIL ' "$logs/$row.$driver.log" || true)
    if [ -n "$fails" ]; then
      while IFS= read -r line; do echo "$row $driver: ${line:0:2000}"; done <<<"$fails"
    elif [ "$rc" != 0 ]; then
      echo "$row $driver: exit $rc without a FAIL line; its last lines:"
      tail -n 5 "$logs/$row.$driver.log" | sed 's/^/    /'
    fi
  done
fi
echo
echo "interop: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
