#!/usr/bin/env bash
# FastMCP with the tasks extension (PyPI fastmcp-tasks 4.1.4) over streamable HTTP,
# peers/fastmcp_tasks_server.py, 2026-07-28 era. Checks: a tool that may run as a task
# becomes one and its result comes back inside the budget, polled with tasks/get (each poll
# a leg of the same budget; --trace shows the task's status as it changes); a tool that must run as a task works (it answers -32021 to a
# client that does not declare the extension); a budget spent while the task runs ends
# within the budget, exit 3, naming the task (`task: <id>`, and in --json); a call cancelled
# (SIGINT) while its task runs cancels the task with tasks/cancel, never notifications/cancelled.
. "$INTEROP_DIR/lib.sh"

port=$(free_port)
start_peer server "$PY_FASTMCP_TASKS" "$INTEROP_DIR/peers/fastmcp_tasks_server.py" "$port"
wait_port server "$port" 60
T=(--url "http://127.0.0.1:$port/mcp")

mcp "${T[@]}" --trace --timeout 10 call sleep '{"seconds": 1}'
check "a task's result comes back inside the budget, polled with tasks/get" rc=0 \
  out='^slept 1' err='method=tools/call .*status=200' err='method=tasks/get .*status=200' \
  err='^task=[A-Za-z0-9_-]+ status=working' err='^task=[A-Za-z0-9_-]+ status=completed' max_ms=9000

mcp "${T[@]}" --trace --timeout 10 call batch '{"seconds": 0.2}'
check "a tool that must run as a task works" rc=0 out='^slept 0.2' err='method=tasks/get'

mcp "${T[@]}" --trace --timeout 2 --resolution ms call sleep '{"seconds": 30}'
check "a budget spent while the task runs ends within it, naming the task" rc=3 \
  err='^task: [A-Za-z0-9_-]+$' err='ran out while its task' \
  err='method=tasks/get .*status=200' max_ms=2600

mcp "${T[@]}" --json --timeout 1 call sleep '{"seconds": 30}'
check "--json carries the task" rc=3 err='"kind":"task_running"' err='"task":\{"id":"[^"]+"' err='"status":"working"'

# Cancelled once the first poll is answered (the trace line is the signal, not a sleep).
"$MCP_CALL" --driver "$DRIVER" "${T[@]}" --trace call sleep '{"seconds": 30}' \
  >"$ROW_TMP/out" 2>"$ROW_TMP/err" </dev/null &
pid=$!
for _ in $(seq 400); do
  grep -q 'method=tasks/get' "$ROW_TMP/err" && break
  sleep 0.05
done
kill -INT "$pid"
wait "$pid"
RC=$? OUT=$(cat "$ROW_TMP/out") ERR=$(cat "$ROW_TMP/err") MS=0
check "a cancelled call cancels its task on the server" rc=6 \
  err='method=tasks/cancel .*status=200' no_err='notifications/cancelled'

finish
