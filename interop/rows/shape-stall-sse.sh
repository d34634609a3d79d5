#!/usr/bin/env bash
# Failure shapes of an HTTP+SSE server (peers/stall-sse.py; POSTs to /sse answered 405), each
# `mcp-call --timeout 2 --resolution ms call echo` on the `.../sse` URL. silent: the stream
# stays alive but never names its endpoint, found by the fallback and pinned (--transport
# sse): the GET's timeout at the budget (exit 3 or 4), nothing POSTed, the whole process ended
# within 2.3 s. elsewhere: the endpoint names another origin: refused (malformed, exit 5) at
# once, and no connection reaches the other origin. closes: the stream ends after the first
# POST's 202, without its answer: the operation ends at once (well inside the budget). And
# nothing of mcp-call is left running.
. "$INTEROP_DIR/lib.sh"
WATCHDOG=15

run() { # <port> <transport>
  mcp --url "http://127.0.0.1:$1/sse" --transport "$2" --header "X-Interop-Tag: $TAG" \
    --timeout 2 --resolution ms --trace --json call echo '{"text":"hi"}'
}

port=$(free_port)
start_peer silent python3 "$INTEROP_DIR/peers/stall-sse.py" "$port" "$TAG" silent
wait_port silent "$port"
for transport in auto sse; do
  run "$port" "$transport"
  check "silent, --transport $transport: the GET's timeout, nothing sent without an endpoint" rc='3|4' \
    err='"kind":"(budget_exhausted|leg_timed_out)"' err='method=sse ' err='answering GET' \
    no_err='method=tools/call .*status=202'
  check "silent, --transport $transport: ends within 2.3 s of a 2 s budget" max_ms=2300
done

port=$(free_port)
other=$(free_port)
start_peer elsewhere python3 "$INTEROP_DIR/peers/stall-sse.py" "$port" "$TAG" elsewhere "$other" "$ROW_TMP/elsewhere"
wait_port elsewhere "$port"
wait_port elsewhere "$other"
# wait_port's own connection is recorded first: that record is the signal to clear it.
for _ in $(seq 100); do [ -e "$ROW_TMP/elsewhere" ] && break; sleep 0.05; done
rm -f "$ROW_TMP/elsewhere"
run "$port" sse
check "elsewhere: an endpoint on another origin refused before anything is POSTed" rc=5 \
  err='"kind":"malformed"' err='another origin' no_err='method=initialize' max_ms=1500
if [ -e "$ROW_TMP/elsewhere" ]; then fail "elsewhere: nothing reaches the other origin" "$(cat "$ROW_TMP/elsewhere")"; else ok "elsewhere: nothing reaches the other origin"; fi

port=$(free_port)
start_peer closes python3 "$INTEROP_DIR/peers/stall-sse.py" "$port" "$TAG" closes
wait_port closes "$port"
run "$port" sse
check "closes: the stream's end before the answer ends the operation at once" rc=5 \
  err='"kind":"malformed"' err='closed the HTTP\+SSE event stream' max_ms=1500

no_process_left "no mcp-call process left" "mcp-call.*X-Interop-Tag: $TAG"
finish
