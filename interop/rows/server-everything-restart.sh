#!/usr/bin/env bash
# A restarted server's lost session, as the TypeScript SDK's routing signals it: the reference
# server (npm @modelcontextprotocol/server-everything 2026.8.31, streamableHttp) answers a
# request of a session it does not know with 400 and "Bad Request: No valid session ID
# provided", not the spec's 404. A host (the Python SDK's ClientSession, peers/python_host.py)
# keeps `mcp-call bridge` in front of it; the server is restarted between two of the host's
# calls. Checks: the call after the restart is answered (the bridge re-initialises once, inside
# one request's budget: its trace shows the 400 and the new handshake), and a
# listing after it too. The same with `mcp-call --repeat` is not possible (its runs cannot be
# paused for a restart); a library client kept across a restart is pinned by the cross-driver
# test a_session_a_typescript_server_forgot_is_recovered_as_for_a_404.
. "$INTEROP_DIR/lib.sh"

port=$(free_port)
everything() {
  start_peer everything env PORT="$port" node --require "$LOOPBACK" \
    "$NPM/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
  wait_port everything "$port"
}
everything

bridge=("$MCP_CALL" --driver "$DRIVER" --resolution ms --timeout 10 --trace
  --url "http://127.0.0.1:$port/mcp" bridge)
timeout -s KILL 90 "$PY_MCP" "$INTEROP_DIR/peers/python_host.py" init \
  'call:echo:{"message":"before"}' "mark:$ROW_TMP/first" "await:$ROW_TMP/restarted:60" \
  'call:echo:{"message":"after"}' tools -- "${bridge[@]}" \
  >"$ROW_TMP/host.out" 2>"$ROW_TMP/host.err" </dev/null &
host=$!

for _ in $(seq 600); do [ -e "$ROW_TMP/first" ] || ! kill -0 "$host" 2>/dev/null && break; sleep 0.05; done
if [ -e "$ROW_TMP/first" ]; then
  # The restart: the whole server ended (its group), then started again on the same port.
  kill -TERM -- "-$PEER_PID" 2>/dev/null
  for _ in $(seq 100); do kill -0 -- "-$PEER_PID" 2>/dev/null || break; sleep 0.05; done
  kill -KILL -- "-$PEER_PID" 2>/dev/null
  everything
  touch "$ROW_TMP/restarted"
fi
wait "$host"
RC=$?
OUT=$(cat "$ROW_TMP/host.out")
ERR=$(cat "$ROW_TMP/host.err")
MS=0

check "the host's call before the restart is answered" rc=0 out='^call echo: Echo: before isError=False$'
check "the server was restarted between the host's calls" out='^await: signalled$'
check "the host's call after the restart is answered (the session recovered)" \
  out='^call echo: Echo: after isError=False$'
# (Which request meets the 400 first depends on the driver: the call, or the bridge's stream
# of list changes, which the tokio driver reopens at once when the restart breaks it.)
check "the bridge's trace: a 400 that says the session is gone, then a new handshake" \
  err='method=(tools/call|subscriptions/listen) .*status=400' err='method=initialize .*status=200'
check "a listing after the restart is answered" out='^tools: .*echo'
finish
