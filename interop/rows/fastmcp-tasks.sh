#!/usr/bin/env bash
# FastMCP with the tasks extension (PyPI fastmcp-tasks 4.1.4) over streamable HTTP,
# peers/fastmcp_tasks_server.py, 2026-07-28 era. Checks: a tool that may run as a task
# becomes one and its result comes back inside the budget, polled with tasks/get (each poll
# a leg of the same budget; --trace shows the task's status as it changes); a tool that must
# run as a task works (it answers -32021 to a client that does not declare the extension),
# 10 s of it inside a 30 s budget; a budget spent while the task runs ends within the
# budget, exit 3, naming the task (`task: <id>`, and in --json); `mcp-call task <id>` gets
# its result under a new budget, `--cancel` cancels it (a later look says cancelled); a call
# cancelled (SIGINT) while its task runs cancels the task with tasks/cancel, never
# notifications/cancelled; a task that asks for input (`ask`) gets the answer of --elicit
# with tasks/update, and one nobody answers is declined; --send-deadline puts the budget left
# in each request's _meta (the `remaining` tool says what it saw); --cancel-at-deadline cancels
# the task inside the budget instead of handing it back.
. "$INTEROP_DIR/lib.sh"

port=$(free_port)
start_peer server "$PY_FASTMCP_TASKS" "$INTEROP_DIR/peers/fastmcp_tasks_server.py" "$port"
wait_port server "$port" 60
# Tasks handed back are kept in the credentials file: this row's own.
T=(--url "http://127.0.0.1:$port/mcp" --credentials "$ROW_TMP/credentials.json")

mcp "${T[@]}" --trace --timeout 10 call sleep '{"seconds": 1}'
check "a task's result comes back inside the budget, polled with tasks/get" rc=0 \
  out='^slept 1' err='method=tools/call .*status=200' err='method=tasks/get .*status=200' \
  err='^task=[A-Za-z0-9_-]+ status=working' err='^task=[A-Za-z0-9_-]+ status=completed' max_ms=9000

mcp "${T[@]}" --trace --timeout 10 call batch '{"seconds": 0.2}'
check "a tool that must run as a task works" rc=0 out='^slept 0.2' err='method=tasks/get'

# A task that asks for input: answered once, with tasks/update, then polled to its end.
mcp "${T[@]}" --trace --elicit defaults call ask
check "a task waiting for input gets the answer with tasks/update" rc=0 out='^hello Ada$' \
  err='^elicitation: Who is there\? \(accept\)$' err='method=tasks/update .*status=200' \
  err='status=input_required'
mcp "${T[@]}" call ask
check "without --elicit the task's request is declined" rc=0 out='^decline$'

# --send-deadline: the server sees what is left of the budget; without it, nothing.
mcp "${T[@]}" --send-deadline --timeout 7 --resolution ms call remaining
# (What is left when the request goes out: at most the 7 s, and a slow machine's start-up
# leaves far more than 1 s of it.)
check "--send-deadline tells the server the budget left" rc=0 out='^remainingMs=([1-6][0-9]{3}|7000)$'
mcp "${T[@]}" call remaining
check "without --send-deadline the server is told nothing" rc=0 out='^remainingMs=None$'

# A 10 s task-only tool: done inside a 30 s budget, its polls legs of that budget.
mcp "${T[@]}" --trace --timeout 30 call batch '{"seconds": 10}'
check "a 10 s task completes inside a 30 s budget" rc=0 out='^slept 10' \
  err='leg=[0-9]+ method=tasks/get granted_ms=[0-9]+ .*status=200' max_ms=20000

# The same inside 3 s: handed back by 3 s, kept beside the credentials, resumed under a new
# budget by `mcp-call task <id>`.
mcp "${T[@]}" --trace --timeout 3 --resolution ms call batch '{"seconds": 10}'
check "a budget spent while the task runs ends within it, naming the task" rc=3 \
  err='^task: [A-Za-z0-9_-]+$' err='ran out while its task' \
  err='method=tasks/get .*status=200' max_ms=3600
id=$(sed -n 's/^task: //p' <<<"$ERR")
mcp "${T[@]}" --trace --timeout 30 task "$id"
check "mcp-call task <id> gets the result under a new budget" rc=0 out='^slept 10' \
  err='^leg=1 method=tasks/get granted_ms=30000 ' no_err='tools/call'

# Configured to cancel instead: tasks/cancel goes out before the end.
mcp "${T[@]}" --trace --cancel-at-deadline --timeout 2 --resolution ms call batch '{"seconds": 10}'
# (The cancel's answer may come after the end on a slow machine: the later look is the proof.)
check "--cancel-at-deadline cancels the task inside the budget" rc=3 \
  err='method=tasks/cancel ' err='asked to cancel' max_ms=2600
id=$(sed -n 's/^task: //p' <<<"$ERR")
mcp "${T[@]}" --json task "$id"
check "the cancelled task says so" rc=5 err='"kind":"task_cancelled"'

mcp "${T[@]}" --json --timeout 1 call sleep '{"seconds": 30}'
check "--json carries the task" rc=3 err='"kind":"task_running"' err='"task":\{"id":"[^"]+"' err='"status":"working"'
id=$(grep -o '"task":{"id":"[^"]*"' <<<"$ERR" | sed 's/.*"id":"//; s/"$//')
mcp "${T[@]}" --trace task --cancel "$id"
check "mcp-call task --cancel cancels it on the server" rc=0 out="^cancel requested: $id\$" \
  err='method=tasks/cancel .*status=200'
mcp "${T[@]}" --json task "$id"
check "a later look says it is cancelled" rc=5 err='"kind":"task_cancelled"'

# Cancelled once the first poll is answered.
mcp_interrupted_at 'method=tasks/get' "${T[@]}" call sleep '{"seconds": 30}'
check "a cancelled call cancels its task on the server" rc=6 \
  err='method=tasks/cancel .*status=200' no_err='notifications/cancelled'

finish
