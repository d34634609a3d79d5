#!/usr/bin/env bash
# The reference server (npm @modelcontextprotocol/server-everything 2026.8.31) over the
# HTTP+SSE transport of 2024-11-05 (its `sse` mode: GET /sse, POST /message?sessionId=...),
# bound to 127.0.0.1 by peers/loopback.cjs, from the URL users hold (`.../sse`). Checks: ping
# finds the legacy era (2025-11-25), tools listing, echo, get-sum's isError, resources and
# prompts, trigger-long-running-operation cut at a 1 s budget, the close a hangup; --root answering
# get-roots-list's roots/list on the event stream within a second.
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server env PORT="$port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/server-everything/dist/index.js" sse
wait_port server "$port"

T=(--url "http://127.0.0.1:$port/sse")
ERA=legacy VERSION=2025-11-25
everything_peer
CLOSE='method=hangup .*status=ok'
CLOSE_ARGS=()
peer_checks

mcp "${T[@]}" --root /tmp --trace call get-roots-list
check "--root answers roots/list on the event stream, within a second" rc=0 \
  out='file:///tmp' err='method=response ' max_ms=1000
finish
