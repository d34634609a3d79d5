#!/usr/bin/env bash
# Local servers started as desktop hosts start them, through `npx -y`: npx runs the package's
# bin under `sh -c` in a child of its own, so the real server is mcp-call's grandchild's
# child (npx, sh, node). The reference server (npm @modelcontextprotocol/server-everything
# 2026.8.31, from install.sh's prefix: npx run in that folder finds it without the network),
# well-behaved: a call succeeds, and nothing of the tree is left within 1 s of mcp-call's
# end. A server that reads every line, never answers and runs on after its input ends
# (peers/stall-npx, a package npx installs from its folder), cut at a 5 s budget (npx's own
# start takes a second or two): it ran, the budget/timeout error, the whole process ends
# within 5.3 s, nothing of the tree left within 1 s (the kill reaches the server's process
# group, not npx alone).
. "$INTEROP_DIR/lib.sh"
WATCHDOG=30

cd "$INTEROP_HOME/npm" || exit 1
mcp --stdio "npx -y @modelcontextprotocol/server-everything@2026.8.31 stdio $TAG" --trace \
  call echo '{"message":"through npx"}'
check "npx server-everything: call echo" rc=0 out='^Echo: through npx$' err='method=shutdown .*status=ok'
no_process_left "npx server-everything: nothing of npx, sh, node left" "$TAG"

# npx takes a second or two to start the server on a loaded machine: a 5 s budget, so that
# the server runs (it says so in STALL_STARTED) before the budget ends.
export STALL_STARTED="$ROW_TMP/stall-started"
mcp --stdio "npx -y $INTEROP_DIR/peers/stall-npx $TAG-stall" --timeout 5 --resolution ms --trace --json \
  call echo '{"text":"hi"}'
[ -s "$STALL_STARTED" ] && ok "npx stalled server: it ran" ||
  fail "npx stalled server: it ran" "npx had not started it when the budget ended: $(_excerpt "$ERR")"
check "npx stalled server: the budget/timeout error" rc='3|4' err='"kind":"(budget_exhausted|leg_timed_out)"'
check "npx stalled server: ends within 5.3 s of a 5 s budget" max_ms=5300
no_process_left "npx stalled server: nothing of npx, sh, node left" "$TAG-stall"
finish
