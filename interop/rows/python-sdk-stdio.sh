#!/usr/bin/env bash
# Python SDK (PyPI mcp 2.3.0, MCPServer) over stdio, peers/python_sdk_server.py stdio, one
# process per mcp-call run. Checks: ping finds the modern era (server/discover, 2026-07-28),
# tools listing, a tool call, a tool answering isError (exit 1, --json), resources listing and
# read, prompts listing and get, a call cut at a 1 s budget (its peer ended too), the legacy
# handshake (--protocol 2025-11-25) ended by the shutdown leg, and no peer process left.
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

T=(--stdio "$PY_MCP $INTEROP_DIR/peers/python_sdk_server.py stdio $TAG")
ERA=modern VERSION=2026-07-28
python_peer 'the python sdk'
CLOSE='method=shutdown .*status=ok'
CLOSE_ARGS=(--protocol 2025-11-25)
peer_checks
no_process_left "no peer process left" "$TAG"
finish
