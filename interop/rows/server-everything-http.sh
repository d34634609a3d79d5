#!/usr/bin/env bash
# The reference server (npm @modelcontextprotocol/server-everything 2026.8.31) over streamable
# HTTP (its streamableHttp mode: sessions, SSE answers, event ids), bound to 127.0.0.1 by
# peers/loopback.cjs. Checks: ping finds the legacy era (2025-11-25), tools listing, echo,
# get-sum with a string for a number (isError: exit 1, --json), resources listing and read,
# prompts listing and get, trigger-long-running-operation (10 s, progress) cut at a 1 s budget,
# and the DELETE answered 200; --log-level sends logging/setLevel after the handshake (the
# server declares logging); complete with --context (completable-prompt's second argument
# narrowed by the first); --elicit on a form elicitation (its required name has no default:
# declined by both modes);
# a URL-mode elicitation shown with its domain and declined; --root answering roots/list
# on the standalone stream, within a second on both drivers; --sampling-answer answering the
# trigger-sampling-request tool's sampling/createMessage (offered only to a client that
# declares sampling).
. "$INTEROP_DIR/lib.sh"
. "$INTEROP_DIR/checks.sh"

port=$(free_port)
start_peer server env PORT="$port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
wait_port server "$port"
peer_answers "peer answers initialize as an event stream, with a session" "http://127.0.0.1:$port/mcp" text/event-stream yes

T=(--url "http://127.0.0.1:$port/mcp")
ERA=legacy VERSION=2025-11-25
everything_peer
CLOSE='method=close .*status=200'
CLOSE_ARGS=()
peer_checks

mcp "${T[@]}" --log-level error --trace call "${ECHO[@]:0:2}"
check "--log-level: logging/setLevel after the handshake, answered" rc=0 \
  err='^leg=[0-9]+ method=logging/setLevel .*status=200' out='Echo: hi there'

mcp "${T[@]}" complete prompt:completable-prompt name --context department=Engineering
check "complete with a context: the values the chosen argument narrows" rc=0 \
  out='^Alice$' out='^Bob$' out='^Charlie$' no_out='David'

mcp "${T[@]}" --elicit defaults --trace call trigger-elicitation-request
# (The answer's POST may still await its 202 when the call's result comes: the result ends
# the operation, and that leg is reported cancelled. The server had the answer: it used it.)
# The form requires a name and gives it no default: the defaults cannot complete it, and an
# acceptance without it would break the server's schema (stricter servers refuse one).
check "--elicit defaults answers the server's elicitation on the call's stream (a required field without a default: declined)" rc=0 \
  err='^elicitation: .*\(decline\)$' err='method=response ' out='declined'
mcp "${T[@]}" --elicit decline call trigger-elicitation-request
check "--elicit decline declines it" rc=0 err='\(decline\)$' out='declined'

# A URL to open: shown with its domain, always declined (the tool is offered only to a client
# that declares URL-mode elicitation, which --elicit does).
mcp "${T[@]}" --elicit defaults call trigger-url-elicitation '{"url":"https://pay.example.com/checkout"}'
check "a URL elicitation is shown with its domain and declined" rc=0 \
  err='url=https://pay.example.com/checkout domain=pay.example.com \(declined' out='declined to open'

# The server asks for roots on the session's standalone stream, read beside the call (on the
# blocking driver, on a thread of its own): answered within a second.
mcp "${T[@]}" --root /tmp/interop-root --root file:///srv/data --timeout 10 call get-roots-list
check "--root answers roots/list on the standalone stream" rc=0 max_ms=1000 \
  out='URI: file:///tmp/interop-root' out='URI: file:///srv/data'

mcp "${T[@]}" --sampling-answer 'a canned answer' call trigger-sampling-request '{"prompt":"hello"}'
check "--sampling-answer answers the server's sampling/createMessage on the call's stream" rc=0 \
  err='^sampling: Resource trigger-sampling-request context: hello \(answered\)$' \
  out='"text": "a canned answer"' out='"model": "mcp-call"'
finish
