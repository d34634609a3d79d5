#!/usr/bin/env python3
"""The code a warm call touches: its hot footprint, from two callgrind runs.

Usage:
    bench/footprint.py [--functions N] -- COMMAND...

    bench/footprint.py -- target/release/mcp-call --url URL call echo '{"text":"hi"}' --repeat
    bench/footprint.py -- target/release/mcp-bench floor-child URL modern

Runs COMMAND twice under `valgrind --tool=callgrind --dump-instr=yes`, with 300 and with 600
calls appended as its last argument (`mcp-call ... --repeat`, `mcp-bench floor-child URL ERA`),
and keeps every instruction address that ran at least 300 times more in the second run: the
code one more warm call runs, whatever the process did once (start, handshake, exit) left
out. It prints the instructions a warm call runs (the two runs' difference over the calls
between them), how many distinct 64-byte cache lines and 4 KiB pages its code spans, per
crate, and with --functions N the N functions that span the most lines.

Why lines and not instructions: against a server that does much more work per call than the
client (rmcp's own server: 100-150 µs of CPU a call), the server's run between two calls
evicts the client's code from the caches they share, so each warm call fetches its code
again. Its user time then follows the lines it touches more closely than the instructions it
runs (BENCHMARKS.md, "The per-call path (issue 44)").

This script never changes what it measures, and never runs anything but COMMAND under
valgrind (which must be installed: apt-get install -y valgrind).
"""

import collections
import os
import re
import subprocess
import sys
import tempfile

LINE = 64
PAGE = 4096
SHORT, LONG = 300, 600


def run(command, calls, out):
    """Runs the command with `calls` appended, under callgrind, into `out`."""
    subprocess.run(
        ["valgrind", "--tool=callgrind", "--dump-instr=yes", f"--callgrind-out-file={out}"]
        + command
        + [str(calls)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )


def load(path):
    """Per instruction address: how often it ran (self cost, calls' inclusive lines left out),
    and the function it belongs to."""
    counts = collections.defaultdict(int)
    function_of = {}
    names = {}
    function = "?"
    address = 0
    skip_next = False
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.rstrip("\n")
        if line.startswith(("fn=", "cfn=")):
            match = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line)
            if match and match.group(2):
                names[match.group(1)] = match.group(2)
            if line.startswith("fn=") and match:
                function = names.get(match.group(1), "?")
            continue
        if line.startswith("calls="):
            # The next cost line is a call's inclusive cost, not this address's own.
            skip_next = True
            continue
        if not line or line[0] not in "0123456789+-*":
            continue
        fields = line.split()
        position = fields[0]
        if position.startswith("0x"):
            address = int(position, 16)
        elif position.startswith("+"):
            address += int(position[1:])
        elif position.startswith("-"):
            address -= int(position[1:])
        elif position != "*":
            continue
        if skip_next:
            skip_next = False
            continue
        if len(fields) >= 3:
            counts[address] += int(fields[2])
            function_of[address] = function
    return counts, function_of


def crate_of(function):
    name = re.sub(r"^[<&]+(mut )?", "", function)
    match = re.match(r"([a-z_0-9]+)::", name)
    return match.group(1) if match else "libc and other"


def main(argv):
    functions = 0
    if argv[:1] == ["--functions"]:
        functions, argv = int(argv[1]), argv[2:]
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        short, long = os.path.join(folder, "short"), os.path.join(folder, "long")
        run(argv, SHORT, short)
        run(argv, LONG, long)
        before, _ = load(short)
        after, function_of = load(long)
    extra = LONG - SHORT
    hot = [a for a, n in after.items() if n - before.get(a, 0) >= extra]
    lines = {}
    for address in hot:
        lines.setdefault(address // LINE, function_of[address])
    pages = {address // PAGE for address in hot}
    # Every instruction the longer run ran more, per call more: a warm call's instructions.
    instructions = (sum(after.values()) - sum(before.values())) / extra
    print(f"instructions per warm call: {instructions:.0f}")
    print(
        f"hot code per warm call: {len(lines)} lines of {LINE} B "
        f"({len(lines) * LINE / 1024:.0f} KiB), {len(pages)} pages of 4 KiB, "
        f"{len(hot)} instruction addresses"
    )
    by_crate = collections.Counter(crate_of(f) for f in lines.values())
    print("  by crate: " + ", ".join(f"{c} {n}" for c, n in by_crate.most_common(16)))
    for function, count in collections.Counter(lines.values()).most_common(functions):
        print(f"  {count:5d} {function[:150]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
