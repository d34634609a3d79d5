#!/usr/bin/env bash
# Python SDK (PyPI mcp 2.3.0, MCPServer) over streamable HTTP answering as event streams (its
# default), peers/python_sdk_server.py sse. Checks: ping finds the modern era (2026-07-28),
# tools listing, a tool call, a tool answering isError (exit 1, --json), resources listing and
# read, prompts listing and get, a call cut at a 1 s budget, and a legacy session
# (--protocol 2025-11-25) ended by a DELETE answered 200; --log-level: the server's log
# messages on stderr, the level carried by the modern request (the server filters) and applied
# to a legacy session's (the SDK declares no logging, so no logging/setLevel is sent);
# complete (completion/complete) in both eras; watch: a resource's updates in both eras
# (subscriptions/listen and its acknowledgement; legacy: resources/subscribe, then the
# session's stream), the budget's end the normal end; sampling (--sampling-answer) and roots
# (--root) asked by the SDK's resolvers in both eras (modern: inputRequests answered in the
# call's next round; legacy: requests on the call's stream).
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server "$PY_MCP" "$INTEROP_DIR/peers/python_sdk_server.py" sse "$port"
wait_port server "$port"
peer_answers "peer answers initialize as an event stream, with a session" "http://127.0.0.1:$port/mcp" text/event-stream yes

T=(--url "http://127.0.0.1:$port/mcp")
ERA=modern VERSION=2026-07-28
python_peer 'the python sdk'
CLOSE='method=close .*status=200'
CLOSE_ARGS=(--protocol 2025-11-25)
peer_checks

mcp "${T[@]}" --log-level warning call chatty '{"text":"hi"}'
check "--log-level: the modern request carries the level, the server's messages are printed" \
  rc=0 out='^hi$' err='^log warning interop: careful: hi$' no_err='^log info'
mcp "${T[@]}" --protocol 2025-11-25 --log-level info --trace call chatty '{"text":"hi"}'
check "--log-level on a legacy session that declares no logging: printed, no setLevel" rc=0 \
  err='^log info interop: info: hi$' err='^log warning interop: careful: hi$' \
  no_err='logging/setLevel'
mcp "${T[@]}" call chatty '{"text":"hi"}'
check "without --log-level nothing is printed" rc=0 no_err='^log '

mcp "${T[@]}" --trace complete prompt:greet name A
check "complete: the server's suggestions, one modern request" rc=0 out='^Ada$' out='^Alan$' \
  no_out='Grace' err='^leg=1 method=completion/complete .*status=200'
mcp "${T[@]}" --protocol 2025-11-25 --json complete prompt:greet name G
check "complete on a legacy session, --json" rc=0 out='"values":\["Grace"\]'

mcp_beside 'subscriptions/acknowledged' "${T[@]}" --timeout 3 --trace watch --resource interop://greeting \
  --then "$MCP_CALL" "${T[@]}" call touch '{"uri":"interop://greeting"}'
check "watch: a subscriptions/listen stream hears the update another client causes, to the budget's end" \
  rc=0 out='"method":"notifications/resources/updated".*"uri":"interop://greeting"' \
  err='^leg=1 method=subscriptions/listen granted_ms=3000 .*status=timeout'
mcp "${T[@]}" --protocol 2025-11-25 --timeout 2 --trace watch --resource interop://greeting
check "watch on a legacy session: resources/subscribe, then the session's stream carries the updates" \
  rc=0 out='"method":"notifications/resources/updated","params":\{"uri":"interop://greeting"\}' \
  err='^leg=3 method=resources/subscribe .*status=200' err='^leg=4 .*status=timeout'

for protocol in auto 2025-11-25; do
  mcp "${T[@]}" --protocol "$protocol" --trace --sampling-answer 'it says hi' call summarize '{"text":"hi"}'
  check "sampling answered ($protocol): the server's model request shown, the answer in the result" \
    rc=0 out='^summary by mcp-call: it says hi$' err='^sampling: Summarize: hi \(answered\)$'
  mcp "${T[@]}" --protocol "$protocol" --root /srv/data --root file:///work call roots
  check "roots answered ($protocol): the roots given, a path made a file:// URI" \
    rc=0 out='^file:///srv/data$' out='^file:///work$'
done
mcp "${T[@]}" --trace call summarize '{"text":"hi"}'
check "without --sampling-answer no sampling is offered: the server says so (exit 5)" \
  rc=5 err='sampling capability' no_err='^sampling:'
mcp "${T[@]}" --trace --protocol 2025-11-25 --sampling-answer x --timeout 2 call sleep '{"seconds": 0.1}'
check "an offered sampling the server never asks for changes nothing" rc=0 out='^slept 0.1$'
finish
