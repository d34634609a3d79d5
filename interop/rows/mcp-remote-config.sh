#!/usr/bin/env bash
# A host config written for mcp-remote, with `mcp-call bridge` in place of `npx mcp-remote`
# (issue 43): the hosts' own client libraries, the Python SDK's stdio_client with
# ClientSession (peers/python_host.py) and the TypeScript SDK's StdioClientTransport with
# Client (peers/ts_host.mjs), start the command `mcp-call` (found on PATH) with exactly the
# args such a config carries, in mcp-remote's order: the URL, `--header 'Authorization: Bearer
# ${MCP_REMOTE_TOKEN}'`, `--header-file` (`X-Team: blue`), `--ignore-tool 'ad*'`, `--transport
# http-first`, then `--driver`; the token comes from the config's `env` block (HOST_ENV: the
# SDKs pass the bridge only that and a few variables of their own). The upstream is the Python
# SDK server with INTEROP_BEARER set: any request without the bearer token is answered 401
# (checked first with curl: the literal `${MCP_REMOTE_TOKEN}` and no header are refused, the
# token served). Checks, per host: the handshake; tools/list lacks `add` and has the others; a
# call of an allowed tool answers; the server's `headers` tool saw the expanded token and
# X-Team; a call of `add` is answered -32602 saying the bridge filters it. With the token left
# out of the env block (though the host's own environment has it: the SDKs do not pass it on),
# the host's handshake fails ("Connection closed") as the process ends, the bridge's stderr
# (the host's) naming MCP_REMOTE_TOKEN; run by itself with --trace, that bridge exits 2 and
# sends nothing (no leg traced).
. "$INTEROP_DIR/lib.sh"

token="interop-token-$$-$RANDOM"
port=$(free_port)
start_peer python-http env INTEROP_BEARER="$token" "$PY_MCP" "$INTEROP_DIR/peers/python_sdk_server.py" sse "$port"
wait_port python-http "$port"
url="http://127.0.0.1:$port/mcp"
printf 'X-Team: blue\n' >"$ROW_TMP/team.headers"

# status_of [CURL-ARGS...]: the HTTP status of a legacy initialize POSTed to the upstream.
status_of() {
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 -X POST "$url" "$@" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"interop-probe","version":"1"}}}'
}
# shellcheck disable=SC2016 # the literal ${MCP_REMOTE_TOKEN}, as a config holds it
refused=$(status_of -H 'Authorization: Bearer ${MCP_REMOTE_TOKEN}')/$(status_of)
served=$(status_of -H "Authorization: Bearer $token")
if [ "$refused" = 401/401 ] && [ "$served" = 200 ]; then
  ok "the upstream refuses the literal \${MCP_REMOTE_TOKEN} and no token (401), serves the token"
else
  fail "the upstream refuses the literal \${MCP_REMOTE_TOKEN} and no token (401), serves the token" \
    "literal/none: $refused, token: $served"
fi

# The args of the mcp-remote config, after `npx mcp-remote` became `mcp-call bridge`.
# shellcheck disable=SC2016 # ${MCP_REMOTE_TOKEN} is the bridge's to expand
config=(bridge "$url" --header 'Authorization: Bearer ${MCP_REMOTE_TOKEN}' --header-file "$ROW_TMP/team.headers"
  --ignore-tool 'ad*' --transport http-first --driver "$DRIVER")
# The host finds `mcp-call` on its PATH, as a desktop host does.
bin=$(dirname "$MCP_CALL")
[ "$(PATH="$bin:$PATH" command -v mcp-call)" = "$MCP_CALL" ] ||
  fail "mcp-call on PATH is the one under test" "PATH finds $(PATH="$bin:$PATH" command -v mcp-call)"

# host_run HOST ENV-JSON STEP...: the host runs the steps against `mcp-call` with the
# config's args and ENV-JSON as its env block; OUT and ERR are the host's (ERR holds the
# bridge's stderr), MS its whole run.
host_run() {
  local host=$1 env=$2 t0 t1
  shift 2
  t0=$(date +%s%N)
  case $host in
    python) HOST_ENV=$env PATH="$bin:$PATH" timeout -s KILL 60 "$PY_MCP" "$INTEROP_DIR/peers/python_host.py" "$@" -- mcp-call "${config[@]}" ;;
    ts) HOST_ENV=$env PATH="$bin:$PATH" NPM="$NPM" timeout -s KILL 60 node "$INTEROP_DIR/peers/ts_host.mjs" "$@" -- mcp-call "${config[@]}" ;;
  esac >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null
  RC=$?
  t1=$(date +%s%N)
  MS=$(((t1 - t0) / 1000000))
  OUT=$(cat "$ROW_TMP/out")
  ERR=$(cat "$ROW_TMP/err")
}

for host in python ts; do
  H="$host host"
  host_run "$host" "{\"MCP_REMOTE_TOKEN\":\"$token\"}" init tools 'call:echo:{"text":"hi"}' 'call:headers:{}' \
    'call:add:{"a":1,"b":2}'
  check "$H: the handshake through the expanded bearer token" rc=0 out='^server: interop-python-sdk 1.0.0$'
  check "$H: tools/list lacks the ignored add, has the others" rc=0 \
    out='^tools: echo,fail,sleep,' no_out='^tools: (.*,)?add(,|$)'
  check "$H: a call of an allowed tool answers" rc=0 out='^call echo: hi isError=False$'
  check "$H: the server saw the expanded token and the header file's X-Team" rc=0 \
    out="^call headers: authorization=Bearer $token x-team=blue isError=False\$"
  check "$H: a call of the ignored tool is -32602, filtered by the bridge" rc=0 \
    out='^call add: error -32602 [0-9]+ ms .*"add" is filtered by the bridge'

  # The host's own environment has the token; a host passes its server only the env block.
  MCP_REMOTE_TOKEN=$token host_run "$host" '{}' init tools
  check "$H: MCP_REMOTE_TOKEN left out of the env block, the handshake fails as the bridge ends" \
    rc=0 out='^init: error -32000 .*Connection closed' no_out='^(server|tools):' err='MCP_REMOTE_TOKEN.* is not set' max_ms=20000
done

# The same bridge run by itself (its --driver is mcp's): exit 2, naming the variable, no leg sent.
unset MCP_REMOTE_TOKEN
mcp "${config[@]:0:${#config[@]}-2}" --trace
check "without MCP_REMOTE_TOKEN the bridge exits 2 naming it, nothing sent" rc=2 \
  err='MCP_REMOTE_TOKEN.* is not set' no_err='method='
finish
