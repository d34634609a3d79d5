#!/usr/bin/env bash
# TypeScript SDK (npm @modelcontextprotocol/sdk 1.32.2), its example simpleTaskInteractive
# (2025-11-25 tasks that ask for input: confirm_delete elicits, write_haiku samples; both
# tools require a task), bound to 127.0.0.1 by peers/loopback.cjs. The example sends its
# requests from the task on the session's standalone stream, not on the tasks/result stream
# the client waits on. Checks, on both drivers (the blocking driver reads the stream on a
# thread of its own): each request answered (--elicit, --sampling-answer) beside the
# tasks/result leg, the task's result inside the budget.
. "$INTEROP_DIR/lib.sh"

port=$(free_port)
start_peer server env PORT="$port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleTaskInteractive.js"
wait_port server "$port"
T=(--url "http://127.0.0.1:$port/mcp" --credentials "$ROW_TMP/credentials.json")

mcp "${T[@]}" --trace --sampling-answer 'leaves fall' --timeout 10 call write_haiku '{"topic":"autumn"}'
check "a task's sampling request on the standalone stream is answered, its result fetched" rc=0 \
  out='^leaves fall$' err='^sampling: Write a haiku about autumn \(answered\)$' \
  err='method=listen ' err='method=response .*status=202' err='method=tasks/result .*status=200'
mcp "${T[@]}" --elicit defaults --timeout 10 call confirm_delete '{"filename":"a.txt"}'
check "a task's elicitation the defaults cannot complete (a required boolean) is declined" rc=0 \
  out="^Deletion cancelled$" err="^elicitation: Are you sure you want to delete 'a.txt'\? \(decline\)$"
finish
