#!/usr/bin/env bash
# TypeScript SDK (npm @modelcontextprotocol/sdk 1.32.2), its example
# simpleStatelessStreamableHttp (a new server per request, no session id, SSE answers), its
# fixed port 3000 moved and bound to 127.0.0.1 by peers/loopback.cjs. Checks: ping finds the
# legacy era (2025-11-25), tools listing, start-notification-stream (its only tool; logging
# notifications before the answer), the tool with a wrong argument type (isError: exit 1,
# --json), resources listing and read, prompts listing and get, the tool running 5 s cut at a
# 1 s budget, and no close leg (no session to end).
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server env INTEROP_PORT_MAP="3000=$port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStatelessStreamableHttp.js"
wait_port server "$port"
peer_answers "peer answers initialize as an event stream, without a session" "http://127.0.0.1:$port/mcp" text/event-stream no

T=(--url "http://127.0.0.1:$port/mcp")
ERA=legacy VERSION=2025-11-25
TOOLS=(start-notification-stream)
ECHO=(start-notification-stream '{"interval":1,"count":2}' 'Started sending periodic notifications every 1ms')
FAIL=(start-notification-stream '{"interval":"soon"}' 'Input validation error')
RESOURCE=(https://example.com/greetings/default 'Hello, world!')
PROMPT=(greeting-template '{"name":"Ada"}' 'Please greet Ada in a friendly manner')
SLOW=(start-notification-stream '{"interval":500,"count":10}')
CLOSE=none
CLOSE_ARGS=()
peer_checks
finish
