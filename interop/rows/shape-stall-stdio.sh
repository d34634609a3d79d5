#!/usr/bin/env bash
# Failure shape: a stdio server that reads every line and never answers (peers/stall-stdio.py).
# `mcp-call --timeout 2 --resolution ms call echo`. Checks: the budget/timeout error (exit 3 or
# 4, its kind in --json), the whole process ends within 2.3 s, and no peer process is left
# (pgrep on a tag in its command line).
. "$INTEROP_DIR/lib.sh"
WATCHDOG=15

mcp --stdio "python3 $INTEROP_DIR/peers/stall-stdio.py $TAG" --timeout 2 --resolution ms --trace --json \
  call echo '{"text":"hi"}'
check "the budget/timeout error" rc='3|4' err='"kind":"(budget_exhausted|leg_timed_out)"'
check "ends within 2.3 s of a 2 s budget" max_ms=2300
no_process_left "no peer process left" "$TAG"
finish
