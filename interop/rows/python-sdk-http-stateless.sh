#!/usr/bin/env bash
# Python SDK (PyPI mcp 2.3.0, MCPServer) over streamable HTTP without sessions
# (stateless_http=True), peers/python_sdk_server.py stateless. Checks: ping finds the modern era (2026-07-28),
# tools listing, a tool call, a tool answering isError (exit 1, --json), resources listing and
# read, prompts listing and get, a call cut at a 1 s budget, and a legacy handshake
# (--protocol 2025-11-25) that opens no session: no close leg.
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server "$PY_MCP" "$INTEROP_DIR/peers/python_sdk_server.py" stateless "$port"
wait_port server "$port"
peer_answers "peer answers initialize as an event stream, without a session" "http://127.0.0.1:$port/mcp" text/event-stream no

T=(--url "http://127.0.0.1:$port/mcp")
ERA=modern VERSION=2026-07-28
python_peer 'the python sdk'
CLOSE=none
CLOSE_ARGS=(--protocol 2025-11-25)
peer_checks
finish
