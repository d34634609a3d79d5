#!/usr/bin/env bash
# mcp-call bridge under the hosts' own client libraries: the Python SDK's stdio_client with
# ClientSession (peers/python_host.py) and the TypeScript SDK's StdioClientTransport with
# Client (peers/ts_host.mjs) start `mcp-call bridge` as their local server. Upstreams: the
# Python SDK over HTTP (the modern era it detects, and the legacy one forced), the reference
# server over HTTP and stdio (legacy, the TypeScript SDK), and the Python SDK over stdio (both
# eras).
# Checks, per host and upstream: the handshake answered with the upstream's identity, the
# tools listed, a call, a tool's isError, 16 calls at once each answered with its own result,
# the upstream's progress under the host's own token, a call the host cancels
# (notifications/cancelled) after which the session still answers, and the upstream's
# elicitation (legacy: a request on the call's stream; modern: inputRequests) asked of a host
# whose handshake declared elicitation, its answer relayed. On the Python SDK upstreams, a
# stalled call is answered -32001 by the bridge's 2 s budget (the host's own timeout is far
# off) within 2.15 s of the host's request, naming the budget and the server. After the host
# closes, no upstream process is left. The upstream's tool list change (the bridge listens
# for the changes its handshake declares, subscriptions/listen after subscriptions/listen)
# reaches the host. A 2025-11-25 task asking for input from the task on the standalone stream
# (the TypeScript SDK's simpleTaskInteractive) is answered by the host through the bridge, on
# both drivers. A host speaking the 2026-07-28 era (the Python SDK's
# Client, which probes server/discover) gets the same, the upstream's elicitation (modern
# inputRequests, a legacy request on the call's stream, a request on stdout) asked in an input
# round the host answers with its retry, on the Python SDK upstream (HTTP in both eras, stdio)
# and on the legacy reference server.
# Resource subscriptions: a host's resources/subscribe relayed to the reference server (over
# HTTP and stdio), its updates reaching the host (the second between the host's requests), and
# resources/unsubscribe; a modern host's own subscriptions/listen for tool list changes and
# for a resource's updates. A local upstream's list change sent between the host's requests
# reaches it then (the bridge listens to the process's stdout while no request runs).
. "$INTEROP_DIR/lib.sh"

port=$(free_port)
start_peer python-http "$PY_MCP" "$INTEROP_DIR/peers/python_sdk_server.py" sse "$port"
everything=$(free_port)
start_peer everything env PORT="$everything" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
tasks=$(free_port)
start_peer tasks env PORT="$tasks" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleTaskInteractive.js"
wait_port python-http "$port"
wait_port everything "$everything"
wait_port tasks "$tasks"

# A resource of the reference server, which sends an update of each resource subscribed to
# every 5 s once its toggle-subscriber-updates tool was called.
DOC=demo://resource/static/document/architecture.md

# host_run HOST STEP... -- UPSTREAM-ARGS...: the host runs the steps against
# `mcp-call bridge` in front of the upstream, declaring elicitation (answered with a name);
# OUT and ERR are the host's.
host_run() {
  local host=$1 steps=()
  shift
  while [ "$1" != -- ]; do steps+=("$1"); shift; done
  shift
  local bridge=("$MCP_CALL" --driver "$DRIVER" --resolution ms --trace "$@" bridge)
  export HOST_ELICIT=${ELICIT:-'{"name":"Ada"}'}
  case $host in
    python) timeout -s KILL 60 "$PY_MCP" "$INTEROP_DIR/peers/python_host.py" "${steps[@]}" -- "${bridge[@]}" ;;
    ts) NPM="$NPM" timeout -s KILL 60 node "$INTEROP_DIR/peers/ts_host.mjs" "${steps[@]}" -- "${bridge[@]}" ;;
  esac >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null
  RC=$?
  OUT=$(cat "$ROW_TMP/out")
  ERR=$(cat "$ROW_TMP/err")
}

# The TypeScript SDK handles a response at once and a notification a microtask later: the
# last progress, read in the same chunk as the result, finds its handler gone (it logs
# "unknown token"). The bridge wrote it first; the Python SDK sees every one.
progressed() { # <host> <steps>: the progress line's pattern
  if [ "$1" = ts ]; then echo "($(($2 - 1))|$2) notifications, last ($(($2 - 1))|$2)"; else echo "$2 notifications, last $2(\\.0)?"; fi
}

# python_upstream HOST LABEL UPSTREAM-ARGS...: every check on a Python SDK upstream.
python_upstream() {
  local host=$1 label=$2
  shift 2
  host_run "$host" init tools 'call:echo:{"text":"hi"}' 'call:fail:{"reason":"r"}' parallel:16 \
    'progress:count:{"steps":4}' 'cancel:sleep:{"seconds":30}:0.5' 'call:knock:{}' \
    'call:sleep:{"seconds":30}' -- "$@" --timeout 2
  check "$label: handshake, tools, call, isError, 16 at once" rc=0 \
    out='^server: interop-python-sdk 1.0.0$' out='^tools: echo,add,fail,sleep' \
    out='^call echo: hi isError=False$' out='^call fail: .*failed on purpose: r isError=True$' \
    out='^parallel: 16 of 16 answered, each its own$'
  check "$label: the upstream's progress under the host's token" rc=0 \
    out="^progress count: $(progressed "$host" 4)\$"
  check "$label: a call the host cancels ends upstream, the session answers on" rc=0 \
    out='^cancel sleep: cancelled, ping ok' err='method=tools/call .*status=cancelled'
  check "$label: the upstream's elicitation asked of the host, its answer relayed" rc=0 \
    out='^elicited: Who is there\?$' out='^call knock: Hello, Ada! isError=False$'
  local stalled
  stalled=$(grep -Eo '^call sleep: error -32001 [0-9]+ ms' <<<"$OUT" | grep -Eo '[0-9]+ ms' | grep -Eo '[0-9]+')
  if [ -n "$stalled" ] && ((stalled <= 2150)); then
    ok "$label: a stalled call answered -32001 by the bridge's 2 s budget ($stalled ms)"
  else
    fail "$label: a stalled call answered -32001 by the bridge's 2 s budget" "stdout: $(_excerpt "$OUT" 900)"
  fi
  check "$label: the stalled call's error names the budget and the server" rc=0 \
    out='^call sleep: error -32001 .*budget for this request ran out: MCP server "'
}

# A host that takes a second to answer the upstream's elicitation holds only that request:
# a call the host sends meanwhile is answered first (the tokio driver's operations run on
# workers of their own; on the blocking driver each has its thread).
HOST_ELICIT_DELAY=1 host_run python init 'race:knock:change' -- --url "http://127.0.0.1:$port/mcp" --protocol 2025-11-25
check "a host answering an elicitation slowly holds only that request" rc=0 out='^race: change then knock$'

# A 2025-11-25 task that asks for input from the task, on the session's standalone stream
# (the TypeScript SDK's simpleTaskInteractive): the bridge holds that stream beside the
# host's requests (on both drivers), asks the host, and the task's result answers the call.
for host in python ts; do
  ELICIT='{"confirm":true}' host_run "$host" init 'call:confirm_delete:{"filename":"a.txt"}' -- \
    --url "http://127.0.0.1:$tasks/mcp" --timeout 10
  check "$host host, the TypeScript SDK's task example: a task's elicitation on the standalone stream asked of the host, the task's result" \
    rc=0 out="^elicited: Are you sure you want to delete 'a.txt'\?$" \
    out="^call confirm_delete: Deleted 'a.txt' isError=False$" err='method=tasks/result .*status=200'
done

for host in python ts; do
  host_run "$host" init 'changes:change:5' -- --url "http://127.0.0.1:$port/mcp"
  check "$host host, Python SDK upstream (modern): the upstream's tool list change (its subscriptions/listen) relayed" \
    rc=0 out='^changes: notified$' err='method=subscriptions/listen '
done

# A host that speaks the 2026-07-28 era: the Python SDK's high-level Client in its default
# mode probes server/discover, and each request then names the version in _meta.
HOST_MODE=auto host_run python init tools 'call:echo:{"text":"hi"}' 'call:fail:{"reason":"r"}' \
  parallel:16 'progress:count:{"steps":4}' 'cancel:sleep:{"seconds":30}:0.5' 'call:knock:{}' \
  'call:sleep:{"seconds":30}' -- --url "http://127.0.0.1:$port/mcp" --timeout 2
M="python host in the 2026-07-28 era (the SDK's Client, mode auto), Python SDK upstream"
check "$M: server/discover answered, tools, call, isError, 16 at once" rc=0 \
  out='^server: interop-python-sdk 1.0.0 protocol=2026-07-28$' out='^tools: echo,add,fail,sleep' \
  out='^call echo: hi isError=False$' out='^call fail: .*failed on purpose: r isError=True$' \
  out='^parallel: 16 of 16 answered, each its own$'
check "$M: progress, a host cancel, a stalled call answered -32001 by the budget" rc=0 \
  out='^progress count: 4 notifications, last 4(\.0)?$' out='^cancel sleep: cancelled, ping ok' \
  out='^call sleep: error -32001 [0-9]+ ms The bridge.s 2 s budget for this request ran out'
check "$M: the upstream's elicitation (its inputRequests) asked of the host in an input round, the retry answered" \
  rc=0 out='^elicited: Who is there\?$' out='^call knock: Hello, Ada! isError=False$' \
  err='method=tools/call .*status=200'
# The upstream asks during the call in a legacy era (a request on the call's stream, or on
# stdout): the modern host is still asked in an input round, never sent a request.
# A modern host's own subscriptions (the Client's listen()): acknowledged with what the
# upstream declares, and only what each asked for reaches it, under its id.
HOST_MODE=auto host_run python init 'listen-tools:5:change:{}' -- --url "http://127.0.0.1:$port/mcp"
check "$M: its subscriptions/listen for tool list changes acknowledged, the upstream's change on it" \
  rc=0 out="^listen: acknowledged \\{'toolsListChanged': True\\}$" out='^listen tools: changed$'
HOST_MODE=auto host_run python init 'listen-tools:5:change_later:{"seconds":0.5}' -- \
  --stdio "$PY_MCP $INTEROP_DIR/peers/python_sdk_server.py stdio $TAG" --timeout 3
check "$M: the stdio upstream's change after the call, heard between the host's requests, on its subscription" \
  rc=0 out='^listen tools: changed$'
HOST_MODE=auto host_run python init "listen-resource:2:12:toggle-subscriber-updates:$DOC" -- \
  --stdio "node $NPM/@modelcontextprotocol/server-everything/dist/index.js stdio" --timeout 3
check "$M, the reference server over stdio: its subscription to a resource (resources/subscribe upstream) acknowledged, its updates on it" \
  rc=0 out="^listen: acknowledged \\{'resourceSubscriptions': \\['$DOC'\\]\\}$" \
  out="^listen $DOC: 2 updates\$"
HOST_MODE=auto host_run python init 'call:knock:{}' -- --url "http://127.0.0.1:$port/mcp" \
  --protocol 2025-11-25 --timeout 5
check "$M: the upstream's elicitation on a 2025-11-25 call's stream asked of the host in an input round" \
  rc=0 out='^elicited: Who is there\?$' out='^call knock: Hello, Ada! isError=False$'
HOST_MODE=auto host_run python init 'call:knock:{}' -- \
  --stdio "$PY_MCP $INTEROP_DIR/peers/python_sdk_server.py stdio $TAG" --timeout 5
check "$M: the stdio upstream's elicitation asked of the host in an input round" \
  rc=0 out='^elicited: Who is there\?$' out='^call knock: Hello, Ada! isError=False$'
HOST_MODE=auto host_run python init tools 'call:echo:{"message":"hi"}' \
  'call:trigger-elicitation-request:{}' -- --url "http://127.0.0.1:$everything/mcp"
check "python host in the 2026-07-28 era, the reference server (legacy) upstream: tools, call, its elicitation in an input round" rc=0 \
  out='^server: mcp-servers/everything .* protocol=2026-07-28$' out='^call echo: Echo: hi isError=False$' \
  out='^elicited: Please provide inputs' out='User provided the requested information'

for host in python ts; do
  H="$host host"
  python_upstream "$host" "$H, Python SDK upstream (modern)" --url "http://127.0.0.1:$port/mcp"
  python_upstream "$host" "$H, Python SDK upstream (2025-11-25)" --url "http://127.0.0.1:$port/mcp" \
    --protocol 2025-11-25
  python_upstream "$host" "$H, Python SDK stdio upstream" \
    --stdio "$PY_MCP $INTEROP_DIR/peers/python_sdk_server.py stdio $TAG"
  no_process_left "$H: the host closed, no upstream process left" "$TAG"
  python_upstream "$host" "$H, Python SDK stdio upstream (2025-11-25)" \
    --stdio "$PY_MCP $INTEROP_DIR/peers/python_sdk_server.py stdio $TAG" --protocol 2025-11-25
  no_process_left "$H: the host closed, no upstream process left (2025-11-25)" "$TAG"

  host_run "$host" init tools 'call:echo:{"message":"hi"}' 'call:get-sum:{"a":"x","b":2}' \
    parallel:16:message 'progress:trigger-long-running-operation:{"duration":1,"steps":4}' \
    'cancel:trigger-long-running-operation:{"duration":10,"steps":10}:0.5' \
    'call:trigger-elicitation-request:{}' "subscribe:$DOC" 'call:toggle-subscriber-updates:{}' \
    "updates:2:12:$DOC" "unsubscribe:$DOC" -- --url "http://127.0.0.1:$everything/mcp"
  R="$H, reference server upstream"
  check "$R: handshake, tools, call, isError, 16 at once" rc=0 \
    out='^server: mcp-servers/everything ' out='^tools: .*echo' \
    out='^call echo: Echo: hi isError=False$' out='^call get-sum: .* isError=True$' \
    out='^parallel: 16 of 16 answered, each its own$'
  check "$R: the upstream's progress under the host's token" rc=0 \
    out="^progress trigger-long-running-operation: $(progressed "$host" 4)\$"
  check "$R: a call the host cancels ends upstream, the session answers on" rc=0 \
    out='^cancel trigger-long-running-operation: cancelled, ping ok' err='method=tools/call .*status=cancelled'
  check "$R: its elicitation (on the call's stream) asked of the host" rc=0 \
    out='^elicited: Please provide inputs' out='User provided the requested information'
  check "$R: a resource subscription relayed (resources/subscribe upstream, its updates on the session's stream, the second between the host's requests), and ended" \
    rc=0 out="^subscribe $DOC: ok\$" out="^updates $DOC: 2\$" out="^unsubscribe $DOC: ok\$" \
    err='method=resources/subscribe .*status=200'
  # A local upstream: its stdout is heard between the host's requests (the watcher yields
  # to each of them), and what it sends then reaches the host when it is sent.
  host_run "$host" init "subscribe:$DOC" 'call:toggle-subscriber-updates:{}' "updates:2:12:$DOC" \
    "unsubscribe:$DOC" 'call:echo:{"message":"after"}' -- \
    --stdio "node $NPM/@modelcontextprotocol/server-everything/dist/index.js stdio" --timeout 3
  check "$H, reference server over stdio: a resource's updates relayed, the second between the host's requests" \
    rc=0 out="^subscribe $DOC: ok\$" out="^updates $DOC: 2\$" out="^unsubscribe $DOC: ok\$" \
    out='^call echo: Echo: after isError=False$'
  host_run "$host" init 'call:change_later:{"seconds":1}' listen:5 'call:echo:{"text":"after"}' -- \
    --stdio "$PY_MCP $INTEROP_DIR/peers/python_sdk_server.py stdio $TAG" --timeout 3
  check "$H, Python SDK stdio upstream (modern): a tool list change sent between the host's requests reaches it then" \
    rc=0 out='^listen: notified$' out='^call echo: after isError=False$' \
    err='method=subscriptions/listen .*' err='method=notifications/cancelled '
  no_process_left "$H: no upstream process left after the list change" "$TAG"
done
# A host that dies mid-session (its end of the pipe closed, as a killed process's is): the
# bridge reads EOF, ends the upstream within the close's grant, and exits.
killed="$TAG-killed"
mkfifo "$ROW_TMP/host"
"$MCP_CALL" --driver "$DRIVER" --stdio "$PY_MCP $INTEROP_DIR/peers/python_sdk_server.py stdio $killed" \
  bridge <"$ROW_TMP/host" >"$ROW_TMP/killed.out" 2>&1 &
bridge=$!
exec 8>"$ROW_TMP/host"
echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"dying-host","version":"1"}}}' >&8
for _ in $(seq 200); do grep -q '"id":1' "$ROW_TMP/killed.out" && break; sleep 0.05; done
pgrep -f -- "$killed" | grep -qv "^$bridge\$" && ok "a host's handshake started the upstream process" ||
  fail "a host's handshake started the upstream process" "$(cat "$ROW_TMP/killed.out" | head -c 300)"
exec 8>&-
gone=no
for _ in $(seq 60); do kill -0 "$bridge" 2>/dev/null || { gone=yes; break; }; sleep 0.05; done
if [ "$gone" = yes ]; then ok "the host gone, the bridge exits within 3 s"; else
  fail "the host gone, the bridge exits within 3 s" "still running"; kill -KILL "$bridge"; fi
no_process_left "the host gone, no upstream process left" "$killed"
finish
