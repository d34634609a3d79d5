#!/usr/bin/env bash
# `mcp-call bridge` in front of local servers started through wrappers, its host this shell
# (lines on a FIFO): when the host closes the bridge's stdin, the bridge ends the upstream's
# whole process tree and exits. Upstreams: the reference server through `npx -y`
# (npm @modelcontextprotocol/server-everything 2026.8.31 from install.sh's prefix; npx, sh,
# node), after a handshake and a call answered through the bridge; and a stalled server
# behind a shell (`sh -c 'python3 peers/stall-stdio.py TAG; true'`, which never answers and
# runs on after its input ends), whose handshake is still in flight when the host goes.
# Checks: the bridge exits within 5 s of the host's close (the close's grant is at most 2 s),
# and nothing of the upstream's tree is left within 1 s of its exit. The same when the host
# ends the bridge with SIGTERM instead, its stdin still open (a stalled wrapped upstream).
. "$INTEROP_DIR/lib.sh"

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fifo-host","version":"1"}}}'

# bridge_for NAME UPSTREAM: starts `mcp-call bridge --stdio UPSTREAM` reading the FIFO
# $ROW_TMP/NAME.in (fd 8 its writing end), output in $ROW_TMP/NAME.out; BRIDGE is its pid.
bridge_for() {
  local name=$1
  mkfifo "$ROW_TMP/$name.in"
  "$MCP_CALL" --driver "$DRIVER" --timeout 10 --trace --resolution ms --stdio "$2" bridge \
    <"$ROW_TMP/$name.in" >"$ROW_TMP/$name.out" 2>"$ROW_TMP/$name.err" &
  BRIDGE=$!
  exec 8>"$ROW_TMP/$name.in"
}

# answered NAME ID: waits (up to 20 s) for the bridge's answer to the host's request ID.
answered() {
  for _ in $(seq 400); do grep -q "\"id\":$2[,}]" "$ROW_TMP/$1.out" && return 0; sleep 0.05; done
  return 1
}

# host_closes NAME PATTERN: closes the bridge's stdin; checks it exits within 5 s and that
# nothing matching PATTERN is left within 1 s after.
host_closes() {
  local name=$1
  exec 8>&-
  bridge_exits "$name: the host closed"
  no_process_left "$name: nothing of the upstream's tree left" "$2"
}
# bridge_exits WHAT: checks the bridge exits within 5 s of WHAT (the close's grant is at most
# 2 s; about 1 s is usual: the shutdown step's half, then the group's SIGTERM; the rest is
# room for a loaded machine), saying how long it took either way.
bridge_exits() {
  local t0 gone=no
  t0=$(date +%s%N)
  for _ in $(seq 100); do kill -0 "$BRIDGE" 2>/dev/null || { gone=yes; break; }; sleep 0.05; done
  local ms=$((($(date +%s%N) - t0) / 1000000))
  if [ "$gone" = yes ] && ((ms <= 5000)); then ok "$1, the bridge exits within 5 s ($ms ms)"; else
    fail "$1, the bridge exits within 5 s" "still running after $ms ms: $(tail -c 300 "$ROW_TMP/$name.err" 2>/dev/null)"
    kill -KILL "$BRIDGE"
  fi
}

cd "$INTEROP_HOME/npm" || exit 1
bridge_for npx "npx -y @modelcontextprotocol/server-everything@2026.8.31 stdio $TAG-npx"
echo "$INIT" >&8
answered npx 1 && ok "npx upstream: the handshake answered" ||
  fail "npx upstream: the handshake answered" "$(head -c 300 "$ROW_TMP/npx.out") $(tail -c 300 "$ROW_TMP/npx.err")"
echo '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&8
echo '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"via npx"}}}' >&8
answered npx 2 && grep -q 'Echo: via npx' "$ROW_TMP/npx.out" && ok "npx upstream: a call answered" ||
  fail "npx upstream: a call answered" "$(tail -c 300 "$ROW_TMP/npx.out") $(tail -c 300 "$ROW_TMP/npx.err")"
host_closes "npx upstream" "$TAG-npx"

bridge_for stall "sh -c 'python3 $INTEROP_DIR/peers/stall-stdio.py $TAG-stall; true'"
echo "$INIT" >&8
# The handshake is in flight once the upstream runs (it answers nothing).
for _ in $(seq 200); do pgrep -f -- "python3 .*$TAG-stall" >/dev/null && break; sleep 0.05; done
pgrep -f -- "python3 .*$TAG-stall" >/dev/null && ok "stalled upstream: started by the host's handshake" ||
  fail "stalled upstream: started by the host's handshake" "$(tail -c 300 "$ROW_TMP/stall.err")"
host_closes "stalled upstream" "$TAG-stall"

# A host that ends the bridge with SIGTERM (its stdin still open), as hosts and supervisors
# do: the same end as EOF.
bridge_for term "sh -c 'python3 $INTEROP_DIR/peers/stall-stdio.py $TAG-term; true'"
echo "$INIT" >&8
for _ in $(seq 200); do pgrep -f -- "python3 .*$TAG-term" >/dev/null && break; sleep 0.05; done
kill -TERM "$BRIDGE"
name=term bridge_exits "SIGTERM"
exec 8>&-
no_process_left "SIGTERM: nothing of the upstream's tree left" "$TAG-term"
finish
