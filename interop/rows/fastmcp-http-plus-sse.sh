#!/usr/bin/env bash
# FastMCP (PyPI fastmcp 4.2.3) over the HTTP+SSE transport of 2024-11-05 (its
# transport="sse", peers/fastmcp_server.py sse), from the URL users hold (`.../sse`). Checks:
# ping finds the legacy era (2025-11-25) after the refused POSTs, tools listing, a call,
# isError, resources and prompts, a call cut at a 1 s budget, the close a hangup (the stream dropped).
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server "$PY_FASTMCP" "$INTEROP_DIR/peers/fastmcp_server.py" sse "$port"
wait_port server "$port" 60

T=(--url "http://127.0.0.1:$port/sse")
ERA=legacy VERSION=2025-11-25
python_peer 'fastmcp'
CLOSE='method=hangup .*status=ok'
CLOSE_ARGS=()
peer_checks
finish
