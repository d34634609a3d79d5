#!/usr/bin/env bash
# Failure shape: an HTTP+SSE server whose event stream opens and stays alive (a comment every
# 200 ms) but never names its endpoint (peers/stall-sse.py; POSTs answered 405). `mcp-call
# --timeout 2 --resolution ms call echo` on the `.../sse` URL, found by the fallback and
# pinned (--transport sse). Checks: the leg timeout or budget error naming the GET (exit 3 or
# 4, its kind in --json), nothing POSTed to an endpoint, the whole process ends within 2.3 s
# of the 2 s budget, and nothing of mcp-call is left running.
. "$INTEROP_DIR/lib.sh"
WATCHDOG=15

port=$(free_port)
start_peer server python3 "$INTEROP_DIR/peers/stall-sse.py" "$port" "$TAG"
wait_port server "$port"

for transport in auto sse; do
  mcp --url "http://127.0.0.1:$port/sse" --transport "$transport" --header "X-Interop-Tag: $TAG" \
    --timeout 2 --resolution ms --trace --json call echo '{"text":"hi"}'
  check "--transport $transport: the GET's timeout, nothing sent without an endpoint" rc='3|4' \
    err='"kind":"(budget_exhausted|leg_timed_out)"' err='method=sse ' err='answering GET' \
    no_err='method=tools/call .*status=202'
  check "--transport $transport: ends within 2.3 s of a 2 s budget" max_ms=2300
done
no_process_left "no mcp-call process left" "mcp-call.*X-Interop-Tag: $TAG"
finish
