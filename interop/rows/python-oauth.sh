#!/usr/bin/env bash
# OAuth against the Python SDK's own authorization server (PyPI mcp 2.3.0, mcp.server.auth:
# discovery, DCR, /authorize, /token, /revoke; peers/python_auth_server.py), one fresh server
# per client authentication method:
#   client_secret_basic  the SDK's metadata as it is (it lists client_secret_post and
#                        client_secret_basic; mcp-call asks for basic and the SDK grants it)
#   client_secret_post   the metadata lists only client_secret_post
#   none                 the metadata lists only none (a public client)
# For each: `mcp-call login` (the row reads `authorize: <URL>` on stderr and follows it with
# curl, so the SDK's 302 reaches mcp-call's listener), a call with the kept token (no OAuth
# leg), a call after the token expired (an oauth:refresh leg), then the token revoked at the
# SDK's /revoke (the pair: access and refresh token) and the call after it (the refresh is
# refused and nobody can approve: exit 7, "run `mcp-call login` first"), and a login again;
# for client_secret_basic, a host's call through `mcp-call bridge` with the kept token, and
# after revocation the host's handshake refused with an error saying to log in, then
# `bridge --login` logging in from the bridge itself before the host's call is answered.
# Then a registration whose method the server substituted (asked basic, given post), and
# `--grant client-credentials`, which the SDK's token endpoint does not know (refused with
# invalid_request: a clear error, no secret shown).
# Env: MCP_CALL, DRIVER, INTEROP_HOME, INTEROP_DIR (see interop/run.sh). Exit 0 iff every
# check passed.
set -u
: "${MCP_CALL:?MCP_CALL: the release mcp-call to test}"
: "${DRIVER:?DRIVER: blocking or tokio}"
: "${INTEROP_HOME:=$HOME/.cache/mcp-interop}"
: "${INTEROP_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
# `mcp-call login` listens for the redirect on 127.0.0.1:8976 when it is free and on another
# port when not, and a registration belongs to its redirect URI: one login at a time on this
# machine (the rows that log in take this lock), so a row's registration is the one it expects.
exec 7>"$INTEROP_HOME/.login.lock"
flock 7

PY="$INTEROP_HOME/venv-mcp/bin/python"
SERVER="$INTEROP_DIR/peers/python_auth_server.py"
# Access tokens live this long: more than the 5 s before expiry at which mcp-call stops
# presenting a kept token, so the call right after login presents it.
LIFETIME=12
TMP=$(mktemp -d "${TMPDIR:-/tmp}/interop-python-oauth-$DRIVER.XXXXXX")
failed=0
pids=()

# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL -- "-$pid" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

ok() { printf 'ok %s\n' "$1"; }
fail() {
  printf 'FAIL %s: %s\n' "$1" "$2"
  failed=1
}
# A text on one line, cut at $2 characters (default 600).
excerpt() { printf "%s" "$1" | tr "\n" "|" | cut -c1-"${2:-3000}"; }
# curl to loopback only, never through a proxy.
lcurl() { curl -s --noproxy '*' --max-time 10 "$@"; }

if [ ! -x "$PY" ] || ! "$PY" -c 'import mcp.server.auth' 2>/dev/null; then
  fail "python-oauth peer installed" "no mcp in $INTEROP_HOME/venv-mcp (run interop/install.sh)"
  exit 1
fi

# start_server NAME ARGS...: a fresh server; sets URL, BASE, SERVER_PID. Waits until its
# Protected Resource Metadata answers 200 (polled, 30 s at most).
start_server() {
  local name=$1 port start=$SECONDS
  shift
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  setsid "$PY" "$SERVER" "$@" "$port" >"$TMP/$name.log" 2>&1 </dev/null &
  SERVER_PID=$!
  pids+=("$SERVER_PID")
  BASE="http://127.0.0.1:$port"
  URL="$BASE/mcp"
  until [ "$(lcurl -o /dev/null -w '%{http_code}' "$BASE/.well-known/oauth-protected-resource/mcp")" = 200 ]; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null || ((SECONDS - start >= 30)); then
      fail "$name: server starts" "$(excerpt "$(tail -n 5 "$TMP/$name.log")")"
      return 1
    fi
    sleep 0.1
  done
}

# mcp ARGS...: one mcp-call run on $DRIVER with --trace; sets RC, OUT, ERR. Killed after 60 s.
mcp() {
  timeout -s KILL 60 "$MCP_CALL" --driver "$DRIVER" --trace "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}

# host CREDENTIALS STEP...: the Python SDK's stdio_client (peers/python_host.py; with
# HOST=ts, the TypeScript SDK's, peers/ts_host.mjs) runs the steps against `mcp-call bridge` in
# front of the server, with the kept tokens, declaring elicitation; sets RC, OUT, ERR.
host() {
  local credentials=$1
  shift
  local bridge=("$MCP_CALL" --driver "$DRIVER" --trace --url "$URL" --credentials "$credentials" --timeout 2 bridge)
  case ${HOST:-python} in
    python) HOST_ELICIT='{"name":"Ada"}' timeout -s KILL 60 "$PY" "$INTEROP_DIR/peers/python_host.py" init "$@" -- "${bridge[@]}" ;;
    ts) HOST_ELICIT='{"name":"Ada"}' NPM="$INTEROP_HOME/npm/node_modules" timeout -s KILL 60 node "$INTEROP_DIR/peers/ts_host.mjs" init "$@" -- "${bridge[@]}" ;;
  esac >"$TMP/out" 2>"$TMP/err" </dev/null
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
  bridge_gone "$credentials"
}

# host_login CREDENTIALS STEP...: as host, with `bridge --login`: the bridge's `authorize:` URL
# (on the host's stderr, where hosts show a server's stderr) followed with curl as login() does.
host_login() {
  local credentials=$1 url="" start=$SECONDS answer location
  shift
  : >"$TMP/err"
  timeout -s KILL 60 "$PY" "$INTEROP_DIR/peers/python_host.py" init "$@" -- \
    "$MCP_CALL" --driver "$DRIVER" --trace --url "$URL" --credentials "$credentials" bridge --login \
    >"$TMP/out" 2>"$TMP/err" </dev/null &
  local client=$!
  while [ -z "$url" ]; do
    url=$(sed -n 's/^authorize: //p' "$TMP/err" | head -n 1)
    if [ -z "$url" ] && { ! kill -0 "$client" 2>/dev/null || ((SECONDS - start >= 30)); }; then break; fi
    [ -n "$url" ] || sleep 0.05
  done
  if [ -n "$url" ]; then
    answer=$(lcurl -o /dev/null -w '%{http_code} %{redirect_url}' "$url")
    location=${answer#* }
    [ -n "$location" ] && lcurl -o /dev/null "$location"
  fi
  wait "$client"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
  bridge_gone "$credentials"
}

# bridge_gone CREDENTIALS: waits (5 s at most) until the bridge the host started has exited,
# so that its redirect listener is closed before the next login binds one.
bridge_gone() {
  for _ in $(seq 100); do
    pgrep -f -- "--credentials $1 .*bridge" >/dev/null || return 0
    sleep 0.05
  done
}

# login CREDENTIALS: `mcp-call login`, with curl as the browser: the URL printed on stderr is
# followed (the SDK's /authorize answers 302 at once) and its Location, the redirect to
# mcp-call's loopback listener, requested. Sets RC, OUT, ERR, and AUTHORIZE (the status and
# the redirect's origin and path, never its query: it holds the code).
login() {
  local credentials=$1 url="" start=$SECONDS answer location
  # Emptied first: the loop below must never read an earlier run's authorize line (the
  # background job's own redirection may come after the loop's first read).
  : >"$TMP/err"
  timeout -s KILL 60 "$MCP_CALL" --driver "$DRIVER" --trace --url "$URL" --credentials "$credentials" \
    login >"$TMP/out" 2>"$TMP/err" </dev/null &
  local client=$!
  while [ -z "$url" ]; do
    url=$(sed -n 's/^authorize: //p' "$TMP/err" | head -n 1)
    if [ -z "$url" ] && { ! kill -0 "$client" 2>/dev/null || ((SECONDS - start >= 30)); }; then break; fi
    [ -n "$url" ] || sleep 0.05
  done
  AUTHORIZE="no authorize line"
  if [ -n "$url" ]; then
    answer=$(lcurl -o /dev/null -w '%{http_code} %{redirect_url}' "$url")
    location=${answer#* }
    AUTHORIZE="${answer%% *} ${location%%\?*}"
    [ -n "$location" ] && lcurl -o /dev/null "$location"
  fi
  wait "$client"
  RC=$?
  OUT=$(cat "$TMP/out")
  ERR=$(cat "$TMP/err")
}

# check NAME CONDITION...: rc=N (rc=N|M), out=REGEX, err=REGEX, no_err=REGEX on the last run;
# hidden=TEXT: TEXT (a secret; nothing when empty) is neither on stdout nor on stderr.
check() {
  local name=$1 cond want why=""
  shift
  for cond in "$@"; do
    want=${cond#*=}
    case $cond in
      rc=*) [[ "|$want|" == *"|$RC|"* ]] || why+="exit $RC, not $want; " ;;
      out=*) grep -Eq -- "$want" <<<"$OUT" || why+="stdout lacks /$want/; " ;;
      err=*) grep -Eq -- "$want" <<<"$ERR" || why+="stderr lacks /$want/; " ;;
      no_err=*) grep -Eq -- "$want" <<<"$ERR" && why+="stderr has /$want/; " ;;
      hidden=*) [ -n "$want" ] && grep -Fq -- "$want" <<<"$OUT$ERR" && why+="a secret is shown; " ;;
      *) why+="unknown condition $cond; " ;;
    esac
  done
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "${why}stdout: $(excerpt "$OUT" 200) stderr: $(excerpt "$ERR")"; fi
}

# stored CREDENTIALS FIELD: a field of the one registration (client_id, client_secret,
# auth_method) or token set (access_token, refresh_token) in the credentials file.
stored() {
  "$PY" - "$1" "$2" <<'EOF'
import json, sys
entry = next(iter(json.load(open(sys.argv[1]))["issuers"].values()))
field = sys.argv[2]
if field in ("access_token", "refresh_token"):
    print(next(iter(entry["tokens"].values())).get(field, ""))
else:
    print(entry["client"].get(field, ""))
EOF
}

# wait_refused CREDENTIALS: polls until the server refuses the kept access token (401), at most
# LIFETIME + 15 s.
wait_refused() {
  local token start=$SECONDS
  token=$(stored "$1" access_token)
  while [ "$(lcurl -o /dev/null -w '%{http_code}' -X POST "$URL" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}')" != 401 ]; do
    ((SECONDS - start >= LIFETIME + 15)) && return 1
    sleep 0.2
  done
}

# revoke CREDENTIALS METHOD: the kept access token revoked at the SDK's /revoke (RFC 7009),
# the client authenticated as registered (client_id in the form for every method, as the SDK
# reads it). The SDK's RevocationRequest also requires a client_secret field in the form
# whatever the method ("client_secret: Field required" without it, even with Basic or for a
# public client): an empty one for basic and none. Sets REVOKED to the HTTP status.
revoke() {
  local credentials=$1 method=$2 id secret token
  id=$(stored "$credentials" client_id)
  secret=$(stored "$credentials" client_secret)
  token=$(stored "$credentials" access_token)
  local form=(--data-urlencode "token=$token" --data-urlencode "client_id=$id")
  case $method in
    client_secret_basic) form+=(-u "$id:$secret" --data-urlencode "client_secret=") ;;
    client_secret_post) form+=(--data-urlencode "client_secret=$secret") ;;
    *) form+=(--data-urlencode "client_secret=") ;;
  esac
  REVOKED=$(lcurl -o /dev/null -w '%{http_code}' -X POST "$BASE/revoke" "${form[@]}")
}

# One authentication method, from login to revocation, against its own server.
method_checks() {
  local method=$1
  shift
  start_server "$method" --token-lifetime "$LIFETIME" "$@" || return
  local credentials="$TMP/$method.json"

  login "$credentials"
  check "$method: login registers, authorizes and exchanges the code" rc=0 err='^logged in to ' \
    err='method=oauth:register .*status=201' err='method=oauth:token .*status=200'
  [[ "$AUTHORIZE" == "302 http://127.0.0.1:"*"/callback" ]] || fail "$method: /authorize redirects at once" "$AUTHORIZE"
  [ "$RC" = 0 ] || return
  local registered
  registered=$(stored "$credentials" auth_method)
  if [ "$registered" = "$method" ]; then ok "$method: registered as $method"; else fail "$method: registered as $method" "the registration says $registered"; fi

  mcp --url "$URL" --credentials "$credentials" call echo '{"text":"kept token"}'
  check "$method: a call presents the kept token (no OAuth leg)" rc=0 out='^kept token$' \
    err='method=tools/call .*status=200' no_err='oauth:'

  if [ "$method" = client_secret_basic ]; then
    for HOST in python ts; do
      host "$credentials" tools 'call:echo:{"text":"through the bridge"}' 'call:fail:{"reason":"r"}' \
        'progress:count:{"steps":4}' 'cancel:sleep:{"seconds":30}:0.5' 'call:knock:{}' 'call:sleep:{"seconds":30}'
      check "$method, $HOST host through mcp-call bridge with the kept token: tools, call, isError, progress, cancel, elicitation, a stall at the 2 s budget" rc=0 \
        out='^tools: echo,fail,sleep,count,knock$' out='^call echo: through the bridge isError=False$' \
        out='^call fail: .*failed on purpose: r isError=True$' out='^progress count: [34] notifications' \
        out='^cancel sleep: cancelled, ping ok' out='^elicited: Who is there\?$' \
        out='^call knock: Hello, Ada! isError=False$' out='^call sleep: error -32001 ' no_err='oauth:'
    done
    HOST=python
  fi

  mcp --url "$URL" --credentials "$credentials" call fail '{"reason":"on purpose"}'
  check "$method: a tool answering isError exits 1" rc=1 out='failed on purpose: on purpose'

  if wait_refused "$credentials"; then
    mcp --url "$URL" --credentials "$credentials" call echo '{"text":"refreshed"}'
    check "$method: after the token expired, the call refreshes it" rc=0 out='^refreshed$' \
      err='method=oauth:refresh .*status=200' no_err='oauth:register|oauth:token '
  else
    fail "$method: the token expires" "the server still took it after $((LIFETIME + 15)) s"
  fi

  revoke "$credentials" "$method"
  if [ "$REVOKED" = 200 ]; then ok "$method: /revoke answers 200"; else fail "$method: /revoke answers 200" "status $REVOKED"; fi
  mcp --url "$URL" --credentials "$credentials" call echo '{"text":"revoked"}'
  check "$method: after revocation the refresh is refused and the call asks for a login (exit 7)" \
    rc=7 err='method=oauth:refresh .*status=400' err='mcp-call login' \
    hidden="$(stored "$credentials" client_secret)"

  if [ "$method" = client_secret_basic ]; then
    host "$credentials" 'call:echo:{"text":"revoked"}'
    check "$method: through the bridge, the host's handshake is answered with an error that says to log in" \
      rc=0 out='^init: error -32603 .*run `mcp-call login` first' \
      hidden="$(stored "$credentials" client_secret)"
  fi

  login "$credentials"
  check "$method: login again after revocation (the registration kept)" rc=0 err='^logged in to ' \
    err='method=oauth:token .*status=200' no_err='oauth:register'
  mcp --url "$URL" --credentials "$credentials" call echo '{"text":"again"}'
  check "$method: a call after the new login" rc=0 out='^again$' no_err='oauth:'

  if [ "$method" = client_secret_basic ]; then
    # Revoked again: nobody can refresh, so a person must approve, from the bridge this time.
    revoke "$credentials" "$method"
    host_login "$credentials" 'call:echo:{"text":"after the bridge logged in"}'
    check "$method: bridge --login: the browser flow from the bridge (its URL on the host's stderr), then the host's call" \
      rc=0 err='^authorize: ' err='method=oauth:token .*status=200' err='answers; serving the host' \
      out='^call echo: after the bridge logged in isError=False$' hidden="$(stored "$credentials" client_secret)"
  fi
}

method_checks client_secret_basic
method_checks client_secret_post --advertise-auth-methods client_secret_post
method_checks none --advertise-auth-methods none

# The server substitutes the method (RFC 7591 3.2.1): mcp-call asks for basic, gets post, and
# authenticates as it was told.
if start_server substituted --register-auth-method client_secret_post; then
  login "$TMP/substituted.json"
  check "substituted method: login (asked client_secret_basic, registered client_secret_post)" rc=0 \
    err='method=oauth:token .*status=200'
  if [ "$RC" = 0 ]; then
    registered=$(stored "$TMP/substituted.json" auth_method)
    if [ "$registered" = client_secret_post ]; then ok "substituted method: kept as client_secret_post"; else
      fail "substituted method: kept as client_secret_post" "the registration says $registered"; fi
    mcp --url "$URL" --credentials "$TMP/substituted.json" call echo '{"text":"post"}'
    check "substituted method: a call" rc=0 out='^post$'
  fi
fi

# client_credentials: the SDK's token endpoint knows only authorization_code, refresh_token and
# jwt-bearer, so a known client asking for it is refused (400 invalid_request); mcp-call must
# say so at once, naming the token endpoint, without the secret.
if start_server machine --machine-client interop-machine:machine-secret-1; then
  mcp --url "$URL" --credentials "$TMP/machine.json" --grant client-credentials \
    --client-id interop-machine --client-secret machine-secret-1 call echo '{"text":"machine"}'
  check "client credentials: refused by the SDK (no such grant): the authorization server's fault (exit 8), with a clear error" rc=8 \
    err='method=oauth:client-credentials .*status=400' err='token endpoint .*400.*invalid_request' \
    hidden=machine-secret-1
fi

exit "$failed"
