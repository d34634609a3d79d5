#!/usr/bin/env bash
# The Python SDK (PyPI mcp 2.3.0) over the HTTP+SSE transport of 2024-11-05 (deprecated, still
# served: its `run("sse")`, peers/python_sdk_server.py http-sse): GET /sse opens the event
# stream, whose `endpoint` event names /messages/?session_id=...; every answer comes on the
# stream. From the URL users hold (`.../sse`): ping finds the legacy era (2025-11-25), tools
# listing, a call, isError, resources and prompts, a call cut at a 1 s budget, the close a hangup (the stream dropped)
# (the stream was the session); found as the spec says (the modern POST and the legacy
# `initialize` POST refused with 405, then the GET, inside one budget); `--transport sse` (the
# GET first), and a --config entry's `"type": "sse"` (VS Code's); the stream kept by the
# session (three calls: the GET and the handshake once, then one POST a call; the hangup at the
# end); `watch --resource` (resources/subscribe, the updates heard on the session's stream); `--transport streamable-http` (the refusal is the error); --root answering the
# server's roots/list asked on the event stream, by a POST to the endpoint; and
# `mcp-call bridge` in front of it, under the Python SDK's own host (handshake, tools, a call,
# the upstream's elicitation relayed to the host).
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server "$PY_MCP" "$INTEROP_DIR/peers/python_sdk_server.py" http-sse "$port"
wait_port server "$port" 60

T=(--url "http://127.0.0.1:$port/sse")
ERA=legacy VERSION=2025-11-25
python_peer 'the python sdk'
CLOSE='method=hangup .*status=ok'
CLOSE_ARGS=()
peer_checks

mcp "${T[@]}" --trace call echo '{"text":"found"}'
check "found as the spec says: both POSTs refused (405), then the GET, in one budget" rc=0 \
  out='^found$' err='^leg=1 method=tools/call .*status=405' \
  err='^leg=2 method=initialize .*status=405' err='^leg=3 method=sse .*status=200'

mcp "${T[@]}" --transport sse --trace call echo '{"text":"pinned"}'
check "--transport sse: the GET first, no POST refused" rc=0 out='^pinned$' \
  err='^leg=1 method=sse ' no_err='status=405'

printf '{"servers": {"legacy": {"type": "sse", "url": "http://127.0.0.1:%s/sse"}}}' "$port" >"$ROW_TMP/servers.json"
mcp --config "$ROW_TMP/servers.json" --server legacy --trace call echo '{"text":"configured"}'
check "a --config entry with VS Code's \"type\": \"sse\": the GET first" rc=0 out='^configured$' \
  err='^leg=1 method=sse ' no_err='status=405'

mcp "${T[@]}" --transport streamable-http --json call echo '{"text":"x"}'
check "--transport streamable-http: the refused initialize is the error" rc=5 \
  err='"kind":"http_status"' err='initialize with HTTP status 405'

mcp "${T[@]}" --root /srv/data --trace call roots
# (The answer's POST may still await its 202 when the call's result comes on the stream: the
# result ends the operation, and that leg is reported cancelled. The server had the answer.)
check "--root: roots/list asked on the event stream, answered by a POST to the endpoint" rc=0 \
  out='^file:///srv/data$' err='method=response .*status=(202|cancelled)'

mcp "${T[@]}" --transport sse --repeat 3 --trace call echo '{"text":"kept"}'
check "the stream is kept by the session: the GET and the handshake once, then one POST a call" rc=0 \
  out='^kept$' err='summary: runs=3 errors=0' err='^leg=1 method=sse ' err='^leg=1 method=tools/call .*status=202' \
  err='^leg=1 method=hangup .*status=ok'

mcp "${T[@]}" --timeout 2 watch --resource interop://greeting
check "watch --resource: resources/subscribe, then the updates heard on the session's stream" rc=0 \
  out='"method":"notifications/resources/updated".*interop://greeting'

export HOST_ELICIT='{"name":"Ada"}'
timeout -s KILL 60 "$PY_MCP" "$INTEROP_DIR/peers/python_host.py" init tools 'call:echo:{"text":"bridged"}' \
  'call:knock:{}' -- "$MCP_CALL" --driver "$DRIVER" bridge "http://127.0.0.1:$port/sse" \
  >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null
RC=$? OUT=$(cat "$ROW_TMP/out") ERR=$(cat "$ROW_TMP/err")
check "the bridge in front of it: handshake, tools, a call, the elicitation relayed" rc=0 \
  out='^server: interop-python-sdk 1.0.0$' out='^tools: echo,' out='^call echo: bridged isError=False$' \
  out='^elicited: Who is there\?$' out='^call knock: Hello, Ada! isError=False$'
finish
