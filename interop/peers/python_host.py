"""A host, as desktop apps built on the Python SDK (PyPI `mcp`) are: its `stdio_client` starts
the command given after `--` as a local MCP server and its `ClientSession` speaks to it. For
the bridge rows: the command is `mcp-call bridge ...`. Prints one line per step for the row to
check:

    python python_host.py STEP... -- COMMAND ARGS...

Steps: init (the handshake: `server: <name> <version>`, or `init: error <code> <message>` and
no more steps), tools (`tools: a,b`),
call:<tool>:<json> (`call <tool>: <text> isError=<bool>` or `call <tool>: error <code> <ms> ms
<message>`), progress:<tool>:<json> (the call with a progress callback: `progress <tool>: <n>
notifications, last <progress>`), parallel:<n>[:<key>] (n echo calls at once, their text
under key, default text: `parallel: <k> of <n> answered, each its own`), changes:<tool>:<seconds> (the tool called every 200 ms until the
server's notifications/tools/list_changed is heard: `changes: notified` or `changes: none`),
listen:<seconds> (waits, sending nothing, until the server's notifications/tools/list_changed
is heard: `listen: notified` or `listen: none`), subscribe:<uri> and unsubscribe:<uri>
(`subscribe <uri>: ok` or `subscribe <uri>: error <code> <message>`), updates:<n>:<seconds>:<uri>
(waits, sending nothing, until n notifications/resources/updated of the URI were heard in all:
`updates <uri>: <count>`), listen-tools:<seconds>:<tool>:<json> and
listen-resource:<n>:<seconds>:<tool>:<uri> (2026-07-28 hosts, HOST_MODE set: the Client's
`listen()` for the tool list's changes, or for that resource's updates, then the tool called
(with those arguments, or none); `listen: acknowledged <honored filter>`, then `listen tools: changed` or
`listen tools: none`, or `listen <uri>: <count> updates`), race:<slow>:<fast> (the slow tool, then 200 ms later the fast
one, both without arguments: `race: <first> then <second>`), cancel:<tool>:<json>:<seconds> (the call cancelled by the host after that long,
then a ping: `cancel <tool>: cancelled, ping ok <ms> ms`), mark:<path> (creates the file, for
the row to see this point was reached), await:<path>:<seconds> (waits until the row creates
the file: `await: signalled` or `await: timed out`). With HOST_ELICIT set (a JSON
object), the host declares elicitation and accepts each with that content, printing
`elicited: <message>` (after HOST_ELICIT_DELAY seconds, when set). With HOST_MODE set (`auto`, `legacy` or a version), the host is the
SDK's high-level `Client` in that mode instead (`auto`: `server/discover` first, the 2026-07-28
era when it is answered); `init` then also prints `protocol=<version>`. With HOST_ENV set (a
JSON object of strings), it is the server's `env` (as a host config's `env` block): the SDK
merges it over the few variables it inherits by default.
"""

import json
import os
import sys
import time

import anyio
import mcp_types as types
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


def text_of(result) -> str:
    return " ".join(getattr(block, "text", "?") for block in result.content)


async def main() -> None:
    split = sys.argv.index("--")
    steps, command = sys.argv[1:split], sys.argv[split + 1 :]
    extra = os.environ.get("HOST_ENV")
    params = StdioServerParameters(command=command[0], args=command[1:], env=json.loads(extra) if extra else None)
    content = os.environ.get("HOST_ELICIT")
    callback = None
    if content is not None:

        async def callback(context, asked: types.ElicitRequestParams) -> types.ElicitResult:
            print(f"elicited: {asked.message}", flush=True)
            # A person who takes a while to answer.
            await anyio.sleep(float(os.environ.get("HOST_ELICIT_DELAY", "0")))
            return types.ElicitResult(action="accept", content=json.loads(content))

    mode = os.environ.get("HOST_MODE")
    if mode is not None:
        try:
            async with Client(params, mode=mode, elicitation_callback=callback) as client:
                info = client.server_info
                print(f"server: {info.name} {info.version} protocol={client.protocol_version}", flush=True)
                await run_steps(client, [step for step in steps if step != "init"])
        except MCPError as err:
            print(f"init: error {err.error.code} {err.error.message}", flush=True)
        return
    async with stdio_client(params) as (read, write):
        async with ClientSession(
            read, write, elicitation_callback=callback, message_handler=heard
        ) as session:
            if "init" in steps:
                try:
                    result = await session.initialize()
                except MCPError as err:
                    print(f"init: error {err.error.code} {err.error.message}", flush=True)
                    return
                info = result.server_info
                print(f"server: {info.name} {info.version}", flush=True)
            await run_steps(session, [step for step in steps if step != "init"])


# The list changes the server told of, as they come, and the updates of each resource.
changed = anyio.Event()
updated: dict[str, int] = {}


async def heard(message) -> None:
    if isinstance(message, types.ToolListChangedNotification):
        changed.set()
    if isinstance(message, types.ResourceUpdatedNotification):
        uri = str(message.params.uri)
        updated[uri] = updated.get(uri, 0) + 1


async def run_steps(session, steps: list[str]) -> None:
    """Runs the steps after the handshake on a ClientSession or a Client (the same calls)."""
    for step in steps:
        kind, _, rest = step.partition(":")
        if kind == "tools":
            listed = await session.list_tools()
            print("tools: " + ",".join(tool.name for tool in listed.tools), flush=True)
        elif kind == "call":
            tool, _, arguments = rest.partition(":")
            started = time.monotonic()
            try:
                result = await session.call_tool(tool, json.loads(arguments or "{}"))
                print(f"call {tool}: {text_of(result)} isError={result.is_error}", flush=True)
            except MCPError as err:
                ms = round((time.monotonic() - started) * 1000)
                print(f"call {tool}: error {err.error.code} {ms} ms {err.error.message}", flush=True)
        elif kind == "progress":
            tool, _, arguments = rest.partition(":")
            heard = []

            async def progressed(progress, total, message) -> None:
                heard.append(progress)

            result = await session.call_tool(
                tool, json.loads(arguments or "{}"), progress_callback=progressed
            )
            print(f"progress {tool}: {len(heard)} notifications, last {heard[-1] if heard else None}", flush=True)
        elif kind == "parallel":
            count, _, key = rest.partition(":")
            count = int(count)
            answers = []

            async def one(i: int) -> None:
                result = await session.call_tool("echo", {key or "text": f"call {i}"})
                answers.append(text_of(result).endswith(f"call {i}"))

            async with anyio.create_task_group() as group:
                for i in range(count):
                    group.start_soon(one, i)
            print(f"parallel: {sum(answers)} of {count} answered, each its own", flush=True)
        elif kind == "changes":
            # Calls the tool every 200 ms until the server's tool list change is heard.
            tool, _, seconds = rest.partition(":")
            with anyio.move_on_after(float(seconds)):
                while not changed.is_set():
                    await session.call_tool(tool, {})
                    with anyio.move_on_after(0.2):
                        await changed.wait()
            print(f"changes: {'notified' if changed.is_set() else 'none'}", flush=True)
        elif kind == "listen":
            with anyio.move_on_after(float(rest)):
                await changed.wait()
            print(f"listen: {'notified' if changed.is_set() else 'none'}", flush=True)
        elif kind in ("subscribe", "unsubscribe"):
            try:
                if kind == "subscribe":
                    await session.subscribe_resource(rest)
                else:
                    await session.unsubscribe_resource(rest)
                print(f"{kind} {rest}: ok", flush=True)
            except MCPError as err:
                print(f"{kind} {rest}: error {err.error.code} {err.error.message}", flush=True)
        elif kind == "updates":
            count, seconds, uri = rest.split(":", 2)
            with anyio.move_on_after(float(seconds)):
                while updated.get(uri, 0) < int(count):
                    await anyio.sleep(0.05)
            print(f"updates {uri}: {updated.get(uri, 0)}", flush=True)
        elif kind == "listen-tools":
            seconds, tool, arguments = rest.split(":", 2)
            async with session.listen(tools_list_changed=True) as sub:
                print(f"listen: acknowledged {sub.honored.model_dump(by_alias=True, exclude_none=True)}", flush=True)
                await session.call_tool(tool, json.loads(arguments or "{}"))
                heard = None
                with anyio.move_on_after(float(seconds)):
                    heard = await sub.__anext__()
            print(f"listen tools: {'changed' if heard is not None else 'none'}", flush=True)
        elif kind == "listen-resource":
            count, seconds, tool, uri = rest.split(":", 3)
            heard = 0
            async with session.listen(resource_subscriptions=[uri]) as sub:
                print(f"listen: acknowledged {sub.honored.model_dump(by_alias=True, exclude_none=True)}", flush=True)
                await session.call_tool(tool, {})
                with anyio.move_on_after(float(seconds)):
                    async for event in sub:
                        if str(getattr(event, "uri", "")) == uri:
                            heard += 1
                            if heard >= int(count):
                                break
            print(f"listen {uri}: {heard} updates", flush=True)
        elif kind == "race":
            # The slow call (it waits for the host), then, 200 ms later, the fast one: which
            # is answered first.
            slow, fast = rest.split(":", 1)
            order = []

            async def run(tool: str) -> None:
                await session.call_tool(tool, {})
                order.append(tool)

            async with anyio.create_task_group() as group:
                group.start_soon(run, slow)
                await anyio.sleep(0.2)
                group.start_soon(run, fast)
            print(f"race: {' then '.join(order)}", flush=True)
        elif kind == "mark":
            # Tells the row this point was reached: the file is created.
            with open(rest, "w"):
                pass
        elif kind == "await":
            # Waits (at most the seconds given) until the row creates the file: the row
            # changed something (restarted the upstream) between two steps.
            path, _, seconds = rest.rpartition(":")
            with anyio.move_on_after(float(seconds)):
                while not os.path.exists(path):
                    await anyio.sleep(0.05)
            print(f"await: {'signalled' if os.path.exists(path) else 'timed out'}", flush=True)
        elif kind == "cancel":
            tool, _, rest = rest.partition(":")
            arguments, _, after = rest.rpartition(":")
            with anyio.move_on_after(float(after)):
                await session.call_tool(tool, json.loads(arguments or "{}"))
            started = time.monotonic()
            await session.send_ping()
            ms = round((time.monotonic() - started) * 1000)
            print(f"cancel {tool}: cancelled, ping ok {ms} ms", flush=True)


anyio.run(main)
