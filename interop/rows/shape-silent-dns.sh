#!/usr/bin/env bash
# Failure shape: a DNS server that never answers (a silent VPN or captive network's resolver):
# peers/silent-dns.py on port 53 of a loopback address of the row's own, named by a
# resolv.conf bind-mounted over /etc/resolv.conf in a mount namespace of mcp-call's own
# (`unshare -m`: root, as CI runs; the row fails, saying so, where it is not permitted).
# `mcp-call --url http://mcp.silent-dns.test/mcp --timeout 2 --resolution ms --json ping`,
# then `mcp-call bridge` in front of the same URL, given a host's initialize, then the end of
# its input. Checks: the resolver is silent (getent in the namespace is still waiting after
# 3 s), the leg's timeout (exit 4, kind leg_timed_out), the whole process ending within 2.3 s
# of the 2 s budget (the system resolver gives up only after 10 s: a process that waits for
# the lookup ends there); the bridge answers the initialize with an error within 2.3 s and
# exits within 0.5 s of the host's end of input; nothing of mcp-call is left running.
. "$INTEROP_DIR/lib.sh"
WATCHDOG=30
NAME=mcp.silent-dns.test

if ! out=$(unshare -m true 2>&1); then
  fail "unshare -m is permitted (root)" "$(_excerpt "$out")"
  finish
fi
address=127.53.$((RANDOM % 250 + 1)).$((RANDOM % 250 + 1))
start_peer dns python3 "$INTEROP_DIR/peers/silent-dns.py" "$address" "$TAG"
for _ in $(seq 200); do
  grep -q listening "$ROW_TMP/dns.log" 2>/dev/null && break
  kill -0 "$PEER_PID" 2>/dev/null || break
  sleep 0.05
done
if ! grep -q listening "$ROW_TMP/dns.log" 2>/dev/null; then
  fail "the silent DNS server starts" "$(peer_log dns)"
  finish
fi
printf 'nameserver %s\noptions timeout:5 attempts:2\n' "$address" >"$ROW_TMP/resolv.conf"
# in_namespace COMMAND...: the command with the silent server as its resolver.
cat >"$ROW_TMP/in-namespace" <<SH
#!/bin/sh
exec unshare -m sh -c 'mount --bind "\$0" /etc/resolv.conf && exec "\$@"' "$ROW_TMP/resolv.conf" "\$@"
SH
chmod +x "$ROW_TMP/in-namespace"

# The row tests what it says only if the name goes to the silent server.
timeout 3 "$ROW_TMP/in-namespace" getent hosts "$NAME" >/dev/null 2>&1
rc=$?
if ((rc == 124)); then ok "the resolver is silent ($NAME still unanswered after 3 s)"; else
  fail "the resolver is silent" "getent hosts $NAME ended with $rc within 3 s"
  finish
fi

real=$MCP_CALL
MCP_CALL=$ROW_TMP/mcp-call
printf '#!/bin/sh\nexec "%s" "%s" "$@"\n' "$ROW_TMP/in-namespace" "$real" >"$MCP_CALL"
chmod +x "$MCP_CALL"

mcp --url "http://$NAME/mcp" --header "X-Interop-Tag: $TAG" --timeout 2 --resolution ms --json ping
check "the leg's timeout" rc=4 err='"kind":"leg_timed_out"'
check "ends within 2.3 s of a 2 s budget" max_ms=2300

# The bridge: a host's initialize, answered with the budget's error; then the end of the
# host's input, after which the bridge exits at once (no lookup holds it).
initialize='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"interop-host","version":"1"}}}'
mkfifo "$ROW_TMP/host"
timeout -s KILL "$WATCHDOG" "$MCP_CALL" --driver "$DRIVER" --url "http://$NAME/mcp" \
  --header "X-Interop-Tag: $TAG" --timeout 2 --resolution ms bridge \
  <"$ROW_TMP/host" >"$ROW_TMP/out" 2>"$ROW_TMP/err" &
bridge=$!
exec 7>"$ROW_TMP/host"
t0=$(date +%s%N)
printf '%s\n' "$initialize" >&7
for _ in $(seq 400); do
  grep -q '"id":1' "$ROW_TMP/out" 2>/dev/null && break
  sleep 0.05
done
MS=$((($(date +%s%N) - t0) / 1000000))
OUT=$(cat "$ROW_TMP/out") ERR=$(cat "$ROW_TMP/err") RC=0
check "the bridge answers the initialize with the budget's error, within 2.3 s" \
  out='"id":1' out='"error"' max_ms=2300
t0=$(date +%s%N)
exec 7>&-
wait "$bridge"
RC=$?
MS=$((($(date +%s%N) - t0) / 1000000))
OUT=$(cat "$ROW_TMP/out") ERR=$(cat "$ROW_TMP/err")
check "the bridge exits within 0.5 s of the host's end of input" rc=0 max_ms=500
no_process_left "no mcp-call process left" "mcp-call.*X-Interop-Tag: $TAG"
finish
