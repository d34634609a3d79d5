# Sourced by the rows that check a peer's ordinary features (after lib.sh). Set these, then
# call `peer_checks`; every mcp-call run uses the transport in the array T (`--url URL` or
# `--stdio 'COMMAND'`) and --trace, so a failing check quotes the legs.
#   ERA VERSION               what `ping --json` must find (era modern|legacy, protocolVersion)
#   TOOLS=(name...)           tools the listing must have
#   ECHO=(tool args text)     a tool call and the text it prints
#   FAIL=(tool args text)     a tool that answers isError: true, and part of its text
#   RESOURCE=(uri text)       a resource in the listing and part of its text ("" to skip)
#   PROMPT=(name args text)   a prompt in the listing and part of its text ("" to skip)
#   SLOW=(tool args)          a tool that runs for longer than 1 s ("" to skip): called with
#                             --timeout 1, it must be cut at the budget, the process ended
#                             within 1.8 s (the budget and a slow machine's margin: the close
#                             and the end of a local server fit in the budget)
#   CLOSE                     a regex for the close leg's trace line after a session (a legacy
#                             session over HTTP: its DELETE; stdio: the shutdown), or "none"
#   CLOSE_ARGS=(...)          extra flags for the close check (e.g. --protocol 2025-11-25 to
#                             open a session on a server that speaks the modern era too)

peer_checks() {
  mcp "${T[@]}" --json --trace ping
  check "ping finds the $ERA era ($VERSION)" rc=0 out="\"era\":\"$ERA\"" out="\"protocolVersion\":\"$VERSION\""

  local tool listed=()
  for tool in "${TOOLS[@]}"; do listed+=(out="^$tool\$"); done
  mcp "${T[@]}" --trace tools
  check "tools lists ${TOOLS[*]}" rc=0 "${listed[@]}"

  mcp "${T[@]}" --trace call "${ECHO[0]}" "${ECHO[1]}"
  check "call ${ECHO[0]}" rc=0 out="^${ECHO[2]}\$"

  mcp "${T[@]}" --trace --json call "${FAIL[0]}" "${FAIL[1]}"
  check "call ${FAIL[0]}: isError, exit 1" rc=1 out='"isError":true' out="${FAIL[2]}"

  if [ -n "${RESOURCE[0]}" ]; then
    mcp "${T[@]}" --trace resources
    check "resources lists ${RESOURCE[0]}" rc=0 out="^${RESOURCE[0]}\$"
    mcp "${T[@]}" --trace read "${RESOURCE[0]}"
    check "read ${RESOURCE[0]}" rc=0 out="${RESOURCE[1]}"
  fi

  if [ -n "${PROMPT[0]}" ]; then
    mcp "${T[@]}" --trace prompts
    check "prompts lists ${PROMPT[0]}" rc=0 out="^${PROMPT[0]}\$"
    mcp "${T[@]}" --trace prompt "${PROMPT[0]}" "${PROMPT[1]}"
    check "prompt ${PROMPT[0]}" rc=0 out="${PROMPT[2]}"
  fi

  if [ -n "${SLOW[0]}" ]; then
    mcp "${T[@]}" --trace --json --timeout 1 --resolution ms call "${SLOW[0]}" "${SLOW[1]}"
    check "call ${SLOW[0]} cut at a 1 s budget" rc='3|4' \
      err='"kind":"(budget_exhausted|leg_timed_out)"' max_ms=1800
  fi

  mcp "${T[@]}" "${CLOSE_ARGS[@]}" --trace call "${ECHO[0]}" "${ECHO[1]}"
  if [ "$CLOSE" = none ]; then
    check "no close leg (no session)" rc=0 out="^${ECHO[2]}\$" no_err='method=(close|shutdown)'
  else
    check "the close: $CLOSE" rc=0 out="^${ECHO[2]}\$" err="$CLOSE"
  fi
}

# What every Python peer here serves (peers/python_sdk_server.py, peers/fastmcp_server.py):
# the same tools, resource and prompt; the resource's text names the peer ($1).
python_peer() {
  TOOLS=(echo fail add sleep)
  ECHO=(echo '{"text":"hi there"}' 'hi there')
  FAIL=(fail '{"reason":"on purpose"}' 'failed on purpose: on purpose')
  RESOURCE=(interop://greeting "hello from $1")
  PROMPT=(greet '{"name":"Ada"}' 'Please greet Ada')
  SLOW=(sleep '{"seconds":10}')
}

# What the reference server (npm @modelcontextprotocol/server-everything) serves, on every
# transport it speaks.
everything_peer() {
  TOOLS=(echo get-sum get-structured-content trigger-long-running-operation)
  ECHO=(echo '{"message":"hi there"}' 'Echo: hi there')
  FAIL=(get-sum '{"a":"one","b":2}' 'Input validation error')
  RESOURCE=(demo://resource/static/document/architecture.md 'Architecture')
  PROMPT=(args-prompt '{"city":"Paris"}' "What's weather in Paris")
  SLOW=(trigger-long-running-operation '{"duration":10,"steps":10}')
}
