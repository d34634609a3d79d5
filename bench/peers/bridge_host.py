"""The bridge comparison's host on the Python SDK (PyPI `mcp`): its `stdio_client` starts the
bridge command given after `--` (`mcp-call bridge ...` or `mcp-remote ...`) as desktop hosts
built on it do, and measures what the person at the host waits for. Prints one JSON line:

    python bridge_host.py CALLS STALL_CAP_S -- COMMAND ARGS...

cold_ms: from before the bridge is started to the first tools/call answered (the bridge's
start, the handshake, its own way to the upstream); p50_ms, p90_ms, p99_ms: CALLS sequential
echo calls after 10 to warm up; rss_mib: the bridge process's peak resident memory (VmHWM),
read before it is closed; stall_ms and stall: a call of sleep(120) upstream, the time until
the host has any answer and what it was (the SDK has no timeout of its own: the host gives up
at STALL_CAP_S, `capped`).
"""

import json
import os
import statistics
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


def children() -> list[int]:
    found = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            found += [int(pid) for pid in f.read().split()]
    return found


def peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def main() -> None:
    split = sys.argv.index("--")
    calls, cap = int(sys.argv[1]), float(sys.argv[2])
    command = sys.argv[split + 1 :]
    before = set(children())
    started = time.monotonic()
    params = StdioServerParameters(command=command[0], args=command[1:])
    out = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("echo", {"text": "first"})
            out["cold_ms"] = round((time.monotonic() - started) * 1000, 1)
            for _ in range(10):
                await session.call_tool("echo", {"text": "warm"})
            times = []
            for _ in range(calls):
                t0 = time.perf_counter()
                await session.call_tool("echo", {"text": "hi"})
                times.append((time.perf_counter() - t0) * 1000)
            out.update(
                p50_ms=round(statistics.median(times), 3),
                p90_ms=round(quantile(times, 0.9), 3),
                p99_ms=round(quantile(times, 0.99), 3),
            )
            t0 = time.monotonic()
            out["stall"] = "capped"
            with anyio.move_on_after(cap):
                try:
                    result = await session.call_tool("sleep", {"seconds": 120})
                    out["stall"] = "result" + (" (isError)" if result.is_error else "")
                except MCPError as err:
                    out["stall"] = f"error {err.error.code}"
            out["stall_ms"] = round((time.monotonic() - t0) * 1000)
            bridge = [pid for pid in children() if pid not in before]
            out["rss_mib"] = round(peak_rss_mib(bridge[0]), 1) if bridge else None
    print(json.dumps(out), flush=True)


anyio.run(main)
