# Sourced by every interop row (`. "$INTEROP_DIR/lib.sh"`): the checks' vocabulary, peer
# start-up and clean-up. A row using it prints `ok <check>` / `FAIL <check>: <detail>` lines
# through `check`, starts its peers with `start_peer` (each in its own process group, ended on
# exit), and ends with `finish`. It never sleeps for a fixed time: readiness is polled.
# Environment (set by run.sh): MCP_CALL, DRIVER, INTEROP_HOME, INTEROP_DIR; MCP_TYPED_CALL
# (default: mcp-typed-call next to MCP_CALL, as `cargo build --release --bins` leaves it).
# shellcheck disable=SC2034 # TAG, NPM, PY_MCP, PY_FASTMCP, PY_FASTMCP_TASKS, LOOPBACK: for the rows

set -u
: "${MCP_CALL:?MCP_CALL: the release mcp-call to test}"
: "${DRIVER:?DRIVER: blocking or tokio}"
: "${INTEROP_HOME:=$HOME/.cache/mcp-interop}"
: "${INTEROP_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
: "${MCP_TYPED_CALL:=$(dirname "$MCP_CALL")/mcp-typed-call}"

ROW=$(basename "$0" .sh)
ROW_TMP=$(mktemp -d "${TMPDIR:-/tmp}/interop-$ROW-$DRIVER.XXXXXX")
# A tag unique to this run of this row, for peers' command lines (see no_process_left).
TAG="interop-$ROW-$DRIVER-$$"
NPM="$INTEROP_HOME/npm/node_modules"
PY_MCP="$INTEROP_HOME/venv-mcp/bin/python"
PY_FASTMCP="$INTEROP_HOME/venv-fastmcp/bin/python"
PY_FASTMCP_TASKS="$INTEROP_HOME/venv-fastmcp-tasks/bin/python"
LOOPBACK="$INTEROP_DIR/peers/loopback.cjs"
_failed=0
_peers=()

ok() { printf 'ok %s\n' "$1"; }
fail() {
  printf 'FAIL %s: %s\n' "$1" "$2"
  _failed=1
}

_cleanup() {
  local pid
  for pid in "${_peers[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  for pid in "${_peers[@]}"; do
    for _ in $(seq 50); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL -- "-$pid" 2>/dev/null
  done
  rm -rf "$ROW_TMP"
}
trap _cleanup EXIT
trap 'exit 143' TERM INT

# A TCP port free on 127.0.0.1 now, and one no other row of this matrix run was handed (peers/free_port.py says why).
free_port() {
  python3 "$INTEROP_DIR/peers/free_port.py"
}

# start_peer NAME COMMAND...: runs the command in a new process group, output to
# $ROW_TMP/NAME.log; PEER_PID is its pid. Ended (the whole group) when the row exits.
start_peer() {
  local name=$1
  shift
  setsid "$@" >"$ROW_TMP/$name.log" 2>&1 </dev/null &
  PEER_PID=$!
  _peers+=("$PEER_PID")
}

# peer_log NAME: the last lines of a peer's output, on one line.
peer_log() { tail -n 5 "$ROW_TMP/$1.log" 2>/dev/null | tr '\n' '|' | cut -c1-400; }

# wait_port NAME PORT [SECONDS]: polls until 127.0.0.1:PORT accepts (default 30 s); on a peer
# that exits or never listens, prints the FAIL line and ends the row.
wait_port() {
  local name=$1 port=$2 limit=${3:-30} start=$SECONDS
  while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ! kill -0 "$PEER_PID" 2>/dev/null; then
      fail "$name starts" "exited before listening on $port: $(peer_log "$name")"
      finish
    fi
    if ((SECONDS - start >= limit)); then
      fail "$name starts" "not listening on $port after ${limit}s: $(peer_log "$name")"
      finish
    fi
    sleep 0.1
  done
}

# mcp ARGS...: one run of mcp-call on $DRIVER; sets RC, OUT, ERR and MS (the whole process's
# wall time in milliseconds). A run still going after $WATCHDOG seconds (default 60) is killed
# (RC 137) and its stderr says so: a hung client must fail its row, not the matrix's time.
WATCHDOG=${WATCHDOG:-60}
mcp() {
  local t0 t1
  t0=$(date +%s%N)
  timeout -s KILL "$WATCHDOG" "$MCP_CALL" --driver "$DRIVER" "$@" >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null
  RC=$?
  ((RC == 137)) && echo "interop: mcp-call killed after ${WATCHDOG}s (still running)" >>"$ROW_TMP/err"
  t1=$(date +%s%N)
  MS=$(((t1 - t0) / 1000000))
  OUT=$(cat "$ROW_TMP/out")
  ERR=$(cat "$ROW_TMP/err")
}

# typed ARGS...: one run of mcp-typed-call (a tool's result read into a Rust type) on
# $DRIVER, timed and watched as `mcp` is; sets RC, OUT, ERR and MS.
typed() {
  local t0 t1
  t0=$(date +%s%N)
  timeout -s KILL "$WATCHDOG" "$MCP_TYPED_CALL" --driver "$DRIVER" "$@" >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null
  RC=$?
  ((RC == 137)) && echo "interop: mcp-typed-call killed after ${WATCHDOG}s (still running)" >>"$ROW_TMP/err"
  t1=$(date +%s%N)
  MS=$(((t1 - t0) / 1000000))
  OUT=$(cat "$ROW_TMP/out")
  ERR=$(cat "$ROW_TMP/err")
}

# A text on one line, cut at $2 characters (default 300).
_excerpt() { printf '%s' "$1" | tr '\n' '|' | cut -c1-"${2:-300}"; }

# check NAME CONDITION...: one check on the last `mcp` run, every condition must hold:
#   rc=N          the exit code is N (rc=N|M: one of them)
#   out=REGEX     stdout matches (grep -E, any line)     err=REGEX   stderr matches
#   no_err=REGEX  stderr does not match
#   no_out=REGEX  stdout does not match
#   err_seq=REGEX stderr, its lines joined with `|`, matches (for an order of trace lines)
#   out_bytes=N   stdout is N bytes long (its last newline not counted)
#   max_ms=N      the process ended within N ms
check() {
  local name=$1 cond want why="" timed=""
  shift
  for cond in "$@"; do
    [[ $cond == max_ms=* ]] && timed=" (${MS} ms)"
    want=${cond#*=}
    case $cond in
      rc=*) [[ "|$want|" == *"|$RC|"* ]] || why+="exit $RC, not $want; " ;;
      out=*) grep -Eq -- "$want" <<<"$OUT" || why+="stdout lacks /$want/; " ;;
      err=*) grep -Eq -- "$want" <<<"$ERR" || why+="stderr lacks /$want/; " ;;
      no_err=*) grep -Eq -- "$want" <<<"$ERR" && why+="stderr has /$want/; " ;;
      no_out=*) grep -Eq -- "$want" <<<"$OUT" && why+="stdout has /$want/; " ;;
      err_seq=*) grep -Eq -- "$want" <<<"$(tr '\n' '|' <<<"$ERR")" || why+="stderr lacks the sequence /$want/; " ;;
      out_bytes=*) ((${#OUT} == want)) || why+="stdout is ${#OUT} bytes, not $want; " ;;
      max_ms=*) ((MS <= want)) || why+="took ${MS} ms, over ${want}; " ;;
      *) why+="unknown condition $cond; " ;;
    esac
  done
  if [ -z "$why" ]; then
    ok "$name$timed"
  else
    fail "$name" "${why}stdout: $(_excerpt "$OUT") stderr: $(_excerpt "$ERR" 900)"
  fi
}

# no_process_left NAME PATTERN: no process whose command line matches PATTERN (give it the
# run's $TAG) is running, after a short grace for one that is exiting.
no_process_left() {
  local name=$1 pattern=$2
  for _ in $(seq 20); do
    pgrep -f -- "$pattern" >/dev/null || { ok "$name"; return; }
    sleep 0.05
  done
  fail "$name" "still running: $(pgrep -af -- "$pattern" | tr '\n' '|' | cut -c1-300)"
  pkill -KILL -f -- "$pattern"
}

# peer_answers NAME URL TYPE SESSION: a sanity check on the peer itself (so the row tests what
# it says), with curl: its answer to a legacy initialize is of content type TYPE
# (text/event-stream or application/json), with a session id (SESSION=yes) or without (no).
peer_answers() {
  local name=$1 url=$2 type=$3 session=$4 head
  head=$(curl -s -o /dev/null -D - --max-time 10 -X POST "$url" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"interop-probe","version":"1"}}}' |
    tr -d '\r')
  local why=""
  grep -qi "^content-type: $type" <<<"$head" || why+="not $type; "
  if [ "$session" = yes ]; then
    grep -qi '^mcp-session-id:' <<<"$head" || why+="no session id; "
  else
    grep -qi '^mcp-session-id:' <<<"$head" && why+="a session id; "
  fi
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "${why}head: $(_excerpt "$head")"; fi
}

# Ends the row: exit 0 iff every check passed.
# mcp_interrupted_at PATTERN ARGS...: one `mcp-call --trace ARGS` run sent SIGINT once its
# stderr matches PATTERN (the signal is a trace line, not a sleep; given up after 20 s), then
# timed out like `mcp` (RC, OUT, ERR; MS is not measured).
mcp_interrupted_at() {
  local pattern=$1 pid
  shift
  "$MCP_CALL" --driver "$DRIVER" --trace "$@" >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null &
  pid=$!
  for _ in $(seq 400); do
    grep -Eq -- "$pattern" "$ROW_TMP/err" && break
    sleep 0.05
  done
  kill -INT "$pid"
  wait "$pid"
  RC=$? OUT=$(cat "$ROW_TMP/out") ERR=$(cat "$ROW_TMP/err") MS=0
}

# Runs mcp-call with the arguments before `--then` in the background until its stdout shows
# the pattern (or 20 s pass), then the command after `--then` (its output discarded), then
# waits for the first run to end: RC, OUT and ERR are that run's. For what a second client
# must cause while the first one listens.
mcp_beside() { # <stdout-pattern> <mcp-call args...> --then <command...>
  local pattern=$1 pid args=()
  shift
  while (($#)) && [ "$1" != --then ]; do args+=("$1"); shift; done
  shift
  timeout -s KILL "$WATCHDOG" "$MCP_CALL" --driver "$DRIVER" "${args[@]}" >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null &
  pid=$!
  for _ in $(seq 400); do
    grep -Eq -- "$pattern" "$ROW_TMP/out" && break
    sleep 0.05
  done
  "$@" >/dev/null 2>&1 </dev/null
  wait "$pid"
  RC=$? OUT=$(cat "$ROW_TMP/out") ERR=$(cat "$ROW_TMP/err") MS=0
}

finish() { exit "$_failed"; }
