"""The Python SDK's client (`ClientSession` over `streamable_http_client`, PyPI `mcp`) as one
row of the cross-SDK benchmark, driven by `mcp-bench` (bench/src/sdks.rs says the protocol;
interop/install.sh installs the SDK into $INTEROP_HOME/venv-mcp, whose python runs this).

    python bench/peers/py_client.py URL CASE WARMUP_MS WINDOW_MS

CASE is `sequential` (one session opened before the clock, one `tools/call` after another),
`shared-N` (N calls in flight on that one client and session) or `cold-closed` (each operation
a new client and session: handshake, the call, then the SDK's own close, which ends the session
with a DELETE). Prints a `ready` line, waits for a line on stdin, runs, prints one result line
(the raw latencies), then waits for stdin to close, so that its CPU time and peak memory can be
read from /proc while it still exists. It binds nothing and talks only to URL.
"""

import importlib.metadata
import json
import platform
import re
import sys
import time
from contextlib import asynccontextmanager

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

TOOL = "echo"
ARGUMENTS = {"text": "hi"}


def say(line):
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def now_us():
    return time.perf_counter_ns() / 1000


@asynccontextmanager
async def session_on(url):
    """A client with its own HTTP client, its session open (handshake done)."""
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session):
    result = await session.call_tool(TOOL, ARGUMENTS)
    text = result.content[0].text if result.content else None
    if text != ARGUMENTS["text"]:
        raise RuntimeError(f"the echo answered {text!r}")


async def measure(warmup_us, window_us, op):
    """One operation after another: untimed until the warm-up ends, then each one timed until
    the first that ends past the window (as mcp-bench's measure_sync)."""
    warm_end = now_us() + warmup_us
    warm_ops = 0
    while now_us() < warm_end:
        await op()
        warm_ops += 1
    latencies = []
    start = now_us()
    end = start + window_us
    while True:
        t = now_us()
        await op()
        done = now_us()
        latencies.append(done - t)
        if done >= end:
            return {"latencies_us": latencies, "warm_ops": warm_ops, "wall_us": done - start}


async def measure_tasks(n, warmup_us, window_us, op):
    """`n` loops at once, each starting a call only before the window ends; a call started
    before the warm-up's end is untimed; the wall time runs from the warm-up's end to the last
    timed call's end (as mcp-bench's run_tasks)."""
    warm_end = now_us() + warmup_us
    end = warm_end + window_us
    latencies = []
    state = {"warm_ops": 0, "last_done": warm_end}

    async def task():
        while True:
            t = now_us()
            if t >= end:
                return
            await op()
            done = now_us()
            if t >= warm_end:
                latencies.append(done - t)
                state["last_done"] = max(state["last_done"], done)
            else:
                state["warm_ops"] += 1

    async with anyio.create_task_group() as tasks:
        for _ in range(n):
            tasks.start_soon(task)
    return {
        "latencies_us": latencies,
        "warm_ops": state["warm_ops"],
        "wall_us": state["last_done"] - warm_end,
    }


async def run(url, case, warmup_us, window_us):
    shared = re.fullmatch(r"shared-(\d+)", case)
    if case == "cold-closed":

        async def cold():
            async with session_on(url) as session:
                await call(session)

        return await measure(warmup_us, window_us, cold)
    if case != "sequential" and not shared:
        raise RuntimeError(f"no case {case}")
    async with session_on(url) as session:
        await call(session)
        if shared:
            tasks = int(shared.group(1))
            return await measure_tasks(tasks, warmup_us, window_us, lambda: call(session))
        return await measure(warmup_us, window_us, lambda: call(session))


def main():
    try:
        url, case, warmup_ms, window_ms = sys.argv[1:]
        warmup_us, window_us = float(warmup_ms) * 1000, float(window_ms) * 1000
    except ValueError:
        say({"error": "usage: py_client.py URL CASE WARMUP_MS WINDOW_MS"})
        return 1
    version = importlib.metadata.version
    say(
        {
            "ready": True,
            "sdk": f"mcp {version('mcp')} (httpx2 {version('httpx2')})",
            "runtime": f"{platform.python_implementation()} {platform.python_version()}",
        }
    )
    if not sys.stdin.readline():
        return 0
    try:
        result = anyio.run(run, url, case, warmup_us, window_us)
    except BaseException as err:  # an ExceptionGroup from a task group too
        say({"error": f"{type(err).__name__}: {err}"[:400]})
        return 1
    say(result)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())
