#!/usr/bin/env bash
# The reference server (npm @modelcontextprotocol/server-everything 2026.8.31) over stdio, one
# process per mcp-call run. Checks: ping finds the legacy era (2025-11-25) after server/discover
# is refused, tools listing, echo, get-sum with a string for a number (isError: exit 1, --json),
# resources listing and read, prompts listing and get, trigger-long-running-operation (10 s)
# cut at a 1 s budget, the shutdown leg, and no peer process left.
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

T=(--stdio "node $NPM/@modelcontextprotocol/server-everything/dist/index.js stdio $TAG")
ERA=legacy VERSION=2025-11-25
everything_peer
CLOSE='method=shutdown .*status=ok'
CLOSE_ARGS=()
peer_checks
no_process_left "no peer process left" "$TAG"
finish
