#!/usr/bin/env bash
# TypeScript SDK (npm @modelcontextprotocol/sdk 1.32.2), its example simpleStreamableHttp
# --oauth: the MCP server at http://localhost:PORT/mcp (the resource it names) and its demo
# authorization server on another port (another origin: DCR, PKCE, an /authorize that approves
# at once with a 302 to the redirect URI), both bound to 127.0.0.1 by peers/loopback.cjs.
# Checks: a call before any login exits 7 at once; `login` prints `authorize: <URL>`, the URL
# followed with curl reaches mcp-call's loopback redirect and login ends 0 after the token leg;
# no token is printed; the credentials file is 0600; a call and a listing with the kept token
# (no OAuth leg); ping finds the legacy era; `logout` forgets the token (the next call exits 7).
. "$INTEROP_DIR/lib.sh"
# `mcp-call login` listens for the redirect on 127.0.0.1:8976 when it is free and on another
# port when not, and a registration belongs to its redirect URI: one login at a time on this
# machine (the rows that log in take this lock), so a row's registration is the one it expects.
exec 7>"$INTEROP_HOME/.login.lock"
flock 7

mcp_port=$(free_port)
auth_port=$(free_port)
while [ "$auth_port" = "$mcp_port" ]; do auth_port=$(free_port); done
start_peer server env MCP_PORT="$mcp_port" MCP_AUTH_PORT="$auth_port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js" --oauth
wait_port server "$mcp_port"
wait_port server "$auth_port"

creds="$ROW_TMP/credentials.json"
T=(--url "http://localhost:$mcp_port/mcp" --credentials "$creds")

mcp "${T[@]}" --trace --json call greet '{"name":"Ada"}'
check "a call before login exits 7 at once" rc=7 err='status=401' err='"kind":"' max_ms=5000

# login waits for the redirect: run it in the background, follow the URL it prints.
login_err="$ROW_TMP/login.err"
: >"$login_err"
t0=$(date +%s%N)
"$MCP_CALL" --driver "$DRIVER" "${T[@]}" --trace --timeout 60 login >"$ROW_TMP/login.out" 2>"$login_err" </dev/null &
login_pid=$!
url=""
for _ in $(seq 300); do
  url=$(sed -n 's/^authorize: //p' "$login_err" | head -n 1)
  [ -n "$url" ] || ! kill -0 "$login_pid" 2>/dev/null && break
  sleep 0.1
done
if [ -n "$url" ]; then
  ok "login prints authorize: <URL>"
  page=$(curl -s -L --max-time 20 "$url")
  if grep -q 'Authorized' <<<"$page"; then
    ok "the URL leads to mcp-call's redirect page"
  else
    fail "the URL leads to mcp-call's redirect page" "curl got: $(_excerpt "$page")"
  fi
else
  fail "login prints authorize: <URL>" "stderr: $(_excerpt "$(cat "$login_err")")"
  kill "$login_pid" 2>/dev/null
fi
wait "$login_pid"
RC=$?
MS=$((($(date +%s%N) - t0) / 1000000))
OUT=$(cat "$ROW_TMP/login.out")
ERR=$(cat "$login_err")
check "login ends 0 after the token leg" rc=0 err='method=oauth:token .*status=200' out='logged in|legacy era'

token=$(python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print(next(t["access_token"] for i in d["issuers"].values() for t in i.get("tokens", {}).values()))' "$creds" 2>/dev/null)
if [ -z "$token" ]; then
  fail "the token is kept" "no access_token in $creds"
elif grep -qF -- "$token" "$ROW_TMP/login.out" "$login_err"; then
  fail "no token printed" "login's output holds the access token"
else
  ok "no token printed"
fi
mode=$(stat -c %a "$creds" 2>/dev/null)
if [ "$mode" = 600 ]; then
  ok "the credentials file is 0600"
else
  fail "the credentials file is 0600" "mode ${mode:-missing}"
fi

mcp "${T[@]}" --trace call greet '{"name":"Ada"}'
check "a call with the kept token" rc=0 out='^Hello, Ada!$' no_err='oauth:|status=401'

mcp "${T[@]}" --trace tools
check "tools with the kept token" rc=0 out='^greet$' out='^multi-greet$'

mcp "${T[@]}" --trace --json ping
check "ping finds the legacy era (2025-11-25)" rc=0 out='"era":"legacy"' out='"protocolVersion":"2025-11-25"'

mcp "${T[@]}" logout
check "logout" rc=0
mcp "${T[@]}" --trace call greet '{"name":"Ada"}'
check "a call after logout exits 7" rc=7
finish
