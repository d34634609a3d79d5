#!/usr/bin/env bash
# TypeScript SDK (npm @modelcontextprotocol/sdk 1.32.2), its example jsonResponseStreamableHttp
# (sessions, plain JSON answers, tools only, no DELETE route: express answers it 404), its fixed
# port 3000 moved and bound to 127.0.0.1 by peers/loopback.cjs. Checks: ping finds the legacy
# era (2025-11-25), tools listing, greet, greet without its argument (isError: exit 1, --json),
# multi-greet (2 s) cut at a 1 s budget, and the close leg sent, its 404 not failing the call.
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server env INTEROP_PORT_MAP="3000=$port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/sdk/dist/esm/examples/server/jsonResponseStreamableHttp.js"
wait_port server "$port"
peer_answers "peer answers initialize as JSON, with a session" "http://127.0.0.1:$port/mcp" application/json yes

T=(--url "http://127.0.0.1:$port/mcp")
ERA=legacy VERSION=2025-11-25
TOOLS=(greet multi-greet)
ECHO=(greet '{"name":"Ada"}' 'Hello, Ada!')
FAIL=(greet '{}' 'Input validation error')
RESOURCE=("")
PROMPT=("")
SLOW=(multi-greet '{"name":"Ada"}')
CLOSE='method=close .*status=404'
CLOSE_ARGS=()
peer_checks
finish
