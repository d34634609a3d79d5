#!/usr/bin/env bash
# TypeScript SDK (npm @modelcontextprotocol/sdk 1.32.2), its example simpleStreamableHttp
# (sessions, SSE answers, resumability store, tasks), bound to 127.0.0.1 by peers/loopback.cjs.
# Checks: ping finds the legacy era (2025-11-25) after the modern request's 400, tools listing,
# greet, greet without its argument (isError: exit 1, --json), resources listing and read,
# prompts listing and get, multi-greet (2 s) cut at a 1 s budget, and the DELETE answered 200.
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server env MCP_PORT="$port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js"
wait_port server "$port"
peer_answers "peer answers initialize as an event stream, with a session" "http://127.0.0.1:$port/mcp" text/event-stream yes

T=(--url "http://127.0.0.1:$port/mcp")
ERA=legacy VERSION=2025-11-25
TOOLS=(greet multi-greet list-files delay)
ECHO=(greet '{"name":"Ada"}' 'Hello, Ada!')
FAIL=(greet '{}' 'Input validation error')
RESOURCE=(https://example.com/greetings/default 'Hello, world!')
PROMPT=(greeting-template '{"name":"Ada"}' 'Please greet Ada in a friendly manner')
SLOW=(multi-greet '{"name":"Ada"}')
CLOSE='method=close .*status=200'
CLOSE_ARGS=()
peer_checks
finish
