#!/usr/bin/env bash
# Failure shape: a name whose first address is a black hole (broken IPv6, a VPN that drops
# packets). `localhost` resolves to ::1 then 127.0.0.1, as Debian's /etc/hosts says, through
# the system's resolver (mcp-call runs in a mount namespace of its own, `unshare -rm`, whose
# /etc/hosts says so); ::1 at the port is black-holed by peers/blackhole.py (a full accept
# queue: SYNs dropped) while the Python SDK server (PyPI mcp 2.3.0, JSON answers) serves
# 127.0.0.1 at that port. `mcp-call --url http://localhost:PORT/mcp --timeout 10
# --resolution ms --trace call echo`. Checks: the resolver here gives ::1 first; the call
# succeeds; the first leg (which connects) takes under 1 s (one 250 ms attempt delay plus the
# answer; trying the addresses in turn gave ::1 half the budget, 6.7 s); the whole process
# ends within 3 s. Needs unprivileged user namespaces (`unshare -rm`).
. "$INTEROP_DIR/lib.sh"
WATCHDOG=30

hosts="$ROW_TMP/hosts"
printf '::1 localhost\n127.0.0.1 localhost\n' >"$hosts"
# mcp-call under the hosts file above (the arguments passed on as they are).
real=$MCP_CALL
MCP_CALL="$ROW_TMP/mcp-call"
cat >"$MCP_CALL" <<WRAP
#!/bin/sh
exec unshare -rm sh -c 'mount --bind "\$0" /etc/hosts && exec "\$@"' "$hosts" "$real" "\$@"
WRAP
chmod +x "$MCP_CALL"
first=$(unshare -rm sh -c 'mount --bind "$0" /etc/hosts && getent ahosts localhost' "$hosts" 2>&1 | head -n 1)
if [[ $first == "::1 "* ]]; then
  ok "localhost resolves to ::1 first here"
else
  fail "localhost resolves to ::1 first here" "getent in the namespace: $first"
  finish
fi

port=$(free_port)
start_peer server "$PY_MCP" "$INTEROP_DIR/peers/python_sdk_server.py" json "$port"
wait_port server "$port"
start_peer hole python3 "$INTEROP_DIR/peers/blackhole.py" ::1 "$port"
for _ in $(seq 300); do
  grep -q 'black hole ready' "$ROW_TMP/hole.log" 2>/dev/null && break
  kill -0 "$PEER_PID" 2>/dev/null || break
  sleep 0.1
done
if grep -q 'black hole ready' "$ROW_TMP/hole.log" 2>/dev/null; then
  ok "[::1]:$port swallows connects"
else
  fail "[::1]:$port swallows connects" "$(peer_log hole)"
  finish
fi

mcp --url "http://localhost:$port/mcp" --timeout 10 --resolution ms --trace call echo '{"text":"around"}'
check "the call succeeds" rc=0 out='around'
# The first leg's trace line: its elapsed_ms.
leg_ms=$(grep -m1 -oE 'elapsed_ms=[0-9]+' <<<"$ERR" | cut -d= -f2)
if [ -n "$leg_ms" ] && ((leg_ms < 1000)); then
  ok "the first leg connects past the black hole in ${leg_ms} ms (under 1000)"
else
  fail "the first leg connects past the black hole under 1000 ms" "elapsed_ms=${leg_ms:-none}; stderr: $(_excerpt "$ERR" 900)"
fi
check "ends within 3 s of a 10 s budget" max_ms=3000
finish
