#!/usr/bin/env bash
# Failure shape: a legacy-era HTTP server that answers initialize and notifications/initialized,
# then stalls the tools/call and the session's DELETE (peers/stall-close-http.py).
# `mcp-call --timeout 2 --resolution ms call echo`: the budget runs out in the call, and the
# close must not add its own wait. Checks: the budget/timeout error (exit 3 or 4, its kind in
# --json), the whole process ends within 2.3 s, and nothing of mcp-call is left running (pgrep
# on a tag in its command line). The peer is this row's own server, ended on exit.
. "$INTEROP_DIR/lib.sh"
WATCHDOG=15

port=$(free_port)
start_peer server python3 "$INTEROP_DIR/peers/stall-close-http.py" "$port" "$TAG"
wait_port server "$port"

mcp --url "http://127.0.0.1:$port/mcp" --header "X-Interop-Tag: $TAG" --timeout 2 --resolution ms \
  --trace --json call echo '{"text":"hi"}'
check "the budget/timeout error" rc='3|4' err='"kind":"(budget_exhausted|leg_timed_out)"'
check "ends within 2.3 s of a 2 s budget" max_ms=2300
no_process_left "no mcp-call process left" "mcp-call.*X-Interop-Tag: $TAG"
finish
