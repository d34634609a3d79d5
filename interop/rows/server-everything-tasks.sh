#!/usr/bin/env bash
# The reference server (npm @modelcontextprotocol/server-everything 2026.8.31) over streamable
# HTTP, its 2025-11-25 tasks: simulate-research-query requires one (execution.taskSupport
# "required"; four 1 s stages). Checks: the call walks the tools first (does the tool require a
# task?), goes out with params.task, is polled with tasks/get and its result fetched with
# tasks/result, all inside one budget; a 2 s budget ends within it naming the task (exit 3)
# and sends no DELETE (the task lives in its session); `mcp-call task <id>` gets the result in
# that session without a handshake; `task --cancel` cancels it (a later look: cancelled, exit
# 5); a call cancelled (SIGINT) while its task runs sends tasks/cancel; an ambiguous query's
# clarification (an elicitation on the tasks/result stream) is answered with --elicit.
. "$INTEROP_DIR/lib.sh"

port=$(free_port)
start_peer server env PORT="$port" node --require "$LOOPBACK" \
  "$NPM/@modelcontextprotocol/server-everything/dist/index.js" streamableHttp
wait_port server "$port"
# Tasks handed back are kept in the credentials file: this row's own.
T=(--url "http://127.0.0.1:$port/mcp" --credentials "$ROW_TMP/credentials.json")
QUERY=(simulate-research-query '{"topic":"rust"}')

mcp "${T[@]}" --trace --timeout 30 call "${QUERY[@]}"
check "a tool that requires a task runs as one, its result fetched inside the budget" rc=0 \
  out='^# Research Report: rust' err='method=tools/list .*status=200' \
  err='method=tasks/get .*status=200' err='method=tasks/result .*status=200' \
  err='^task=[0-9a-f]+ status=working message="Gathering sources' \
  err='^task=[0-9a-f]+ status=completed' max_ms=15000

# An ambiguous query asks for a clarification on the tasks/result stream: answered there.
mcp "${T[@]}" --trace --elicit defaults --timeout 30 call simulate-research-query \
  '{"topic":"python","ambiguous":true}'
# (Its form requires an interpretation and gives none by default: --elicit defaults declines.)
check "a task waiting for input gets the answer on its tasks/result stream" rc=0 \
  out='User declined - using default interpretation' err='status=input_required' \
  err='^elicitation: The research query' err='method=response .*status=202'

mcp "${T[@]}" --trace --timeout 2 --resolution ms call "${QUERY[@]}"
check "a budget spent while the task runs ends within it, naming the task, its session kept" \
  rc=3 err='^task: [0-9a-f]+$' err='ran out while its task' no_err='method=(close|DELETE)' \
  max_ms=2600
id=$(sed -n 's/^task: //p' <<<"$ERR")
mcp "${T[@]}" --trace --timeout 30 task "$id"
check "mcp-call task <id> gets the result in the task's session" rc=0 \
  out='^# Research Report: rust' err='^leg=1 method=tasks/get ' no_err='method=initialize'

mcp "${T[@]}" --timeout 1 call "${QUERY[@]}"
id=$(sed -n 's/^task: //p' <<<"$ERR")
mcp "${T[@]}" --trace task --cancel "$id"
check "mcp-call task --cancel cancels it on the server" rc=0 out="^cancel requested: $id\$" \
  err='method=tasks/cancel .*status=200'
mcp "${T[@]}" --json task "$id"
check "a later look says it is cancelled" rc=5 err='"kind":"task_cancelled"'

# Cancelled once the first poll is answered.
mcp_interrupted_at 'method=tasks/get' "${T[@]}" call "${QUERY[@]}"
check "a cancelled call cancels its task on the server" rc=6 \
  err='method=tasks/cancel .*status=200' no_err='notifications/cancelled'

finish
