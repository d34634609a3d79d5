#!/usr/bin/env bash
# Failure shape: a stalled stdio server behind a shell, as hosts start them
# (`sh -c 'python3 peers/stall-stdio.py TAG; true'`: the shell waits for the server, which
# reads every line, never answers and runs on after its input ends). `mcp-call --timeout 2
# --resolution ms call echo`. Checks: the budget/timeout error, the whole process ends within
# 2.3 s, and nothing of the tree (the shell, python) is left within 1 s: the kill reaches the
# server's process group, not the shell alone. Then a Ctrl-C (SIGINT to mcp-call, under a 30 s
# budget) once the server runs: cancelled (exit 6), and nothing of the tree left.
. "$INTEROP_DIR/lib.sh"
WATCHDOG=15

mcp --stdio "sh -c 'python3 $INTEROP_DIR/peers/stall-stdio.py $TAG; true'" --timeout 2 --resolution ms --trace --json \
  call echo '{"text":"hi"}'
check "the budget/timeout error" rc='3|4' err='"kind":"(budget_exhausted|leg_timed_out)"'
check "ends within 2.3 s of a 2 s budget" max_ms=2300
no_process_left "nothing of the tree left (sh, python)" "$TAG"

# Ctrl-C: the terminal's SIGINT now reaches mcp-call alone (the server is in a group of its
# own), so mcp-call must cancel and end the server itself.
mcp_interrupted_at 'method=spawn .*status=ok' --stdio "sh -c 'python3 $INTEROP_DIR/peers/stall-stdio.py $TAG-int; true'" \
  --timeout 30 call echo '{"text":"hi"}'
check "Ctrl-C: cancelled (exit 6)" rc=6
no_process_left "Ctrl-C: nothing of the tree left (sh, python)" "$TAG-int"
finish
