#!/usr/bin/env bash
# Failure shape: a stdio server that answers server/discover and then never reads stdin again
# (peers/noread.py). `mcp-call --timeout 2 --resolution ms call echo` with an argument of
# 120 KB, so the request line overflows the 64 KiB pipe and the write blocks. Checks: the
# budget/timeout error (exit 3 or 4, its kind in --json), the whole process ends within 2.3 s,
# and no peer process is left (pgrep on a tag in its command line).
. "$INTEROP_DIR/lib.sh"
WATCHDOG=15

big=$(head -c 120000 /dev/zero | tr '\0' x)
mcp --stdio "python3 $INTEROP_DIR/peers/noread.py $TAG" --timeout 2 --resolution ms --trace --json \
  call echo "{\"text\":\"$big\"}"
check "the budget/timeout error" rc='3|4' err='"kind":"(budget_exhausted|leg_timed_out)"'
check "ends within 2.3 s of a 2 s budget" max_ms=2300
no_process_left "no peer process left" "$TAG"
finish
