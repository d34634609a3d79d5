#!/usr/bin/env bash
# Failure shape: an HTTP CONNECT proxy that accepts every connection, reads the CONNECT and
# never answers it (peers/stall-http.py as the proxy), then one that answers it 502
# (peers/refuse-connect.py). `mcp-call --proxy http://127.0.0.1:P --url
# https://example.test/mcp --timeout 2 --resolution ms --json ping` (the target's name goes to
# the proxy, never to a resolver here). Checks: the proxy's error (exit 4, kind "proxy" in
# --json) naming the proxy and the target, "did not answer CONNECT" within the 2 s granted, the
# whole process ending within 2.3 s; the 502 named as the proxy's refusal at once; nothing of
# mcp-call left running. The peers are this row's own, ended on exit.
. "$INTEROP_DIR/lib.sh"
WATCHDOG=15

stalled=$(free_port)
start_peer stalled python3 "$INTEROP_DIR/peers/stall-http.py" "$stalled" "$TAG"
wait_port stalled "$stalled"
refusing=$(free_port)
start_peer refusing python3 "$INTEROP_DIR/peers/refuse-connect.py" "$refusing" 502 "$TAG"
wait_port refusing "$refusing"

mcp --proxy "http://127.0.0.1:$stalled" --url https://example.test/mcp --header "X-Interop-Tag: $TAG" \
  --timeout 2 --resolution ms --json ping
check "a stalled CONNECT is the proxy's error, naming the proxy and the target" rc=4 \
  err='"kind":"proxy"' \
  err="the proxy http://127\\.0\\.0\\.1:$stalled did not answer CONNECT example\\.test:443 within the (2|1\\.9[0-9]*) s granted" \
  no_err='leg_timed_out'
check "ends within 2.3 s of a 2 s budget" max_ms=2300

mcp --proxy "http://127.0.0.1:$refusing" --url https://example.test/mcp --header "X-Interop-Tag: $TAG" \
  --timeout 2 --resolution ms --json ping
check "a 502 to CONNECT is the proxy's refusal, naming the proxy and the target" rc=4 \
  err='"kind":"proxy"' \
  err="the proxy http://127\\.0\\.0\\.1:$refusing refused the tunnel to example\\.test:443 with HTTP status 502"
check "a refusal ends at once" max_ms=1500
no_process_left "no mcp-call process left" "mcp-call.*X-Interop-Tag: $TAG"
finish
