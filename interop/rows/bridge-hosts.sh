#!/usr/bin/env bash
# mcp-call bridge under the hosts' own client libraries: the Python SDK's stdio_client with
# ClientSession (peers/python_host.py) and the TypeScript SDK's StdioClientTransport with
# Client (peers/ts_host.mjs) start `mcp-call bridge` as their local server. Upstreams: the
# Python SDK over HTTP (the modern era it detects, and the legacy one forced), the reference
# server over HTTP (legacy, the TypeScript SDK), and the Python SDK over stdio. Checks, per host
# and upstream: the handshake answered with the upstream's identity, the tools listed, a call,
# a tool's isError; on the reference server, a long operation's progress under the host's own
# token; on the Python SDK upstream, a stalled call answered -32001 by the bridge's
# 2 s budget (the host's own timeout is far off) within 2.15 s of the host's request, and a
# call the host cancels (notifications/cancelled) after which the session still answers; an
# upstream's elicitation (legacy: a request on the call's stream; modern: inputRequests) asked
# of a host whose handshake declared elicitation, its answer relayed;
# after the host closes, no upstream process is left.
. "$INTEROP_DIR/lib.sh"

port=$(free_port)
start_peer python-http "$PY_MCP" "$INTEROP_DIR/peers/python_sdk_server.py" sse "$port"
everything=$(free_port)
start_peer everything env PORT="$everything" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
wait_port python-http "$port"
wait_port everything "$everything"

# host_run HOST STEP... -- UPSTREAM-ARGS...: the host runs the steps against
# `mcp-call bridge` in front of the upstream; OUT and ERR are the host's.
host_run() {
  local host=$1 steps=() t0 t1
  shift
  while [ "$1" != -- ]; do steps+=("$1"); shift; done
  shift
  local bridge=("$MCP_CALL" --driver "$DRIVER" --resolution ms --trace "$@" bridge)
  t0=$(date +%s%N)
  case $host in
    python) timeout -s KILL 60 "$PY_MCP" "$INTEROP_DIR/peers/python_host.py" "${steps[@]}" -- "${bridge[@]}" ;;
    ts) NPM="$NPM" timeout -s KILL 60 node "$INTEROP_DIR/peers/ts_host.mjs" "${steps[@]}" -- "${bridge[@]}" ;;
  esac >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null
  RC=$?
  t1=$(date +%s%N)
  MS=$(((t1 - t0) / 1000000))
  OUT=$(cat "$ROW_TMP/out")
  ERR=$(cat "$ROW_TMP/err")
}

for host in python ts; do
  H="$host host"
  for protocol in auto 2025-11-25; do
    host_run "$host" init tools 'call:echo:{"text":"hi"}' 'call:fail:{"reason":"r"}' \
      'call:sleep:{"seconds":30}' 'cancel:sleep:{"seconds":30}:0.5' -- \
      --url "http://127.0.0.1:$port/mcp" --protocol "$protocol" --timeout 2
    check "$H, Python SDK upstream ($protocol): handshake, tools, call, isError" rc=0 \
      out='^server: interop-python-sdk 1.0.0$' out='^tools: echo,add,fail,sleep' \
      out='^call echo: hi isError=False$' out='^call fail: .*failed on purpose: r isError=True$'
    stalled=$(grep -Eo '^call sleep: error -32001 [0-9]+ ms' <<<"$OUT" | grep -Eo '[0-9]+ ms' | grep -Eo '[0-9]+')
    if [ -n "$stalled" ] && ((stalled <= 2150)); then
      ok "$H ($protocol): a stalled call answered -32001 by the bridge's 2 s budget ($stalled ms)"
    else
      fail "$H ($protocol): a stalled call answered -32001 by the bridge's 2 s budget" "stdout: $(_excerpt "$OUT" 900)"
    fi
    check "$H ($protocol): the error names the budget and the server" rc=0 \
      out="^call sleep: error -32001 .*budget for this request ran out: MCP server \"127.0.0.1:$port\""
    check "$H ($protocol): a call the host cancels ends upstream, the session answers on" rc=0 \
      out='^cancel sleep: cancelled, ping ok' err='method=tools/call .*status=cancelled'
    HOST_ELICIT='{"name":"Ada"}' host_run "$host" init 'call:knock:{}' -- \
      --url "http://127.0.0.1:$port/mcp" --protocol "$protocol"
    check "$H ($protocol): the upstream's elicitation asked of the host, its answer relayed" rc=0 \
      out='^elicited: Who is there\?$' out='^call knock: Hello, Ada! isError=False$'
  done

  HOST_ELICIT='{"name":"Ada"}' host_run "$host" init 'call:trigger-elicitation-request:{}' -- \
    --url "http://127.0.0.1:$everything/mcp"
  check "$H, reference server upstream: its elicitation (on the call's stream) asked of the host" \
    rc=0 out='^elicited: Please provide inputs' out='User provided the requested information'

  host_run "$host" init tools 'call:echo:{"message":"hi"}' 'call:get-sum:{"a":"x","b":2}' \
    'progress:trigger-long-running-operation:{"duration":1,"steps":4}' -- \
    --url "http://127.0.0.1:$everything/mcp"
  check "$H, reference server upstream (legacy): handshake, tools, call, isError" rc=0 \
    out='^server: mcp-servers/everything ' out='^tools: .*echo' \
    out='^call echo: Echo: hi isError=False$' out='^call get-sum: .* isError=True$'
  # The TypeScript SDK handles a response at once and a notification a microtask later: the
  # last progress, read in the same chunk as the result, finds its handler gone (it logs
  # "unknown token"). The bridge wrote it first; the Python SDK sees all four.
  last='4 notifications, last 4(\.0)?'
  [ "$host" = ts ] && last='[34] notifications, last [34]'
  check "$H, reference server upstream: the host's progress token gets the upstream's progress" \
    rc=0 out="^progress trigger-long-running-operation: $last\$"

  host_run "$host" init tools 'call:echo:{"text":"over stdio"}' 'call:fail:{"reason":"r"}' -- \
    --stdio "$PY_MCP $INTEROP_DIR/peers/python_sdk_server.py stdio $TAG"
  check "$H, Python SDK stdio upstream: handshake, tools, call, isError" rc=0 \
    out='^server: interop-python-sdk 1.0.0$' out='^tools: echo,add,fail,sleep' \
    out='^call echo: over stdio isError=False$' out='^call fail: .* isError=True$'
  no_process_left "$H: the host closed, no upstream process left" "$TAG"
done
finish
