"""A small MCP server on the Python SDK (PyPI `mcp`, 2.x: `MCPServer`, formerly FastMCP),
for the interop rows. It adds no behaviour of its own: what a row observes is the SDK's.

    python python_sdk_server.py stdio
    python python_sdk_server.py sse|json|stateless PORT   (streamable HTTP on 127.0.0.1:PORT/mcp)
    python python_sdk_server.py http-sse PORT   (the HTTP+SSE transport of 2024-11-05:
        GET 127.0.0.1:PORT/sse, POST /messages/?session_id=...; the SDK's `run("sse")`)

sse: answers as an event stream (the SDK's default); json: json_response=True;
stateless: stateless_http=True (no session id, nothing to DELETE).
Tools: echo(text), add(a, b), fail(reason) (raises: the SDK answers isError: true),
sleep(seconds), get_weather(city) (returns a pydantic model Weather: the SDK derives the tool's
outputSchema from the annotation and sends the value as structuredContent), count(steps) (progress 1..steps, 50 ms apart), chatty(text) (logs "info: <text>" at info and "careful: <text>" at warning,
logger "interop", then returns the text).
Resource interop://greeting; prompt greet(name), whose name completes from Ada, Alan, Grace
(completion/complete: the names that begin with what is typed).
summarize(text) samples the client's model (sampling/createMessage), knock() elicits a name
(elicitation/create, a required string) and roots() asks for
the client's roots (roots/list), through the SDK's resolvers: an InputRequiredResult in the
2026-07-28 era, a request mid-call in a legacy session.
change() publishes `notifications/tools/list_changed` to the listen streams asking for it;
change_later(seconds) does so that long after it answered, outside any request (and, for a
legacy session, sends the notification on the session too).
Resource updates: touch(uri) publishes `notifications/resources/updated` for uri to every
`subscriptions/listen` stream asking for it (2026-07-28, the SDK's own bus); a legacy
`resources/subscribe` (which MCPServer leaves unserved) is answered and its session sent the
update five times, 200 ms apart, on its standalone stream (the SDK's send_resource_updated).
headers() returns the request headers the SDK hands the tool (`ctx.headers`):
`authorization=<value> x-team=<value>` (`-` for one absent; on stdio: `no headers`).
With INTEROP_BEARER=<token> in the environment (HTTP modes), every HTTP request that lacks
`Authorization: Bearer <token>` exactly is answered 401 before the SDK sees it (a bare ASGI
wrapper, no OAuth metadata): for the row mcp-remote-config, whose header comes from `${VAR}`.
"""

import os
import sys

import asyncio
from typing import Annotated

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from pydantic import BaseModel
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer(name="interop-python-sdk", version="1.0.0")
# Tasks started by a legacy subscribe, kept so they are not collected mid-way.
_updating = set()


async def _subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    """Legacy resources/subscribe: the session hears of updates to the URI for a while."""

    async def updates() -> None:
        for _ in range(5):
            await anyio.sleep(0.2)
            await ctx.session.send_resource_updated(params.uri)

    task = asyncio.get_running_loop().create_task(updates())
    _updating.add(task)
    task.add_done_callback(_updating.discard)
    return types.EmptyResult()


server._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _subscribe)


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason as the tool's error text."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool()
async def sleep(seconds: float) -> str:
    """Answers after the given number of seconds."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


class Weather(BaseModel):
    """The weather in a city."""

    temperature: float
    conditions: str
    humidity: float


@server.tool()
def get_weather(city: str) -> Weather:
    """A fixed forecast for any city."""
    return Weather(temperature=18.0, conditions=f"cloudy in {city}", humidity=65.0)


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Reports progress 1..steps of steps, 50 ms apart, then answers."""
    for step in range(1, steps + 1):
        await anyio.sleep(0.05)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted {steps}"


@server.tool()
async def chatty(text: str, ctx: Context) -> str:
    """Logs twice (info, warning), then returns its text."""
    await ctx.log("info", f"info: {text}", logger_name="interop")
    await ctx.log("warning", f"careful: {text}", logger_name="interop")
    return text


@server.tool()
async def change(ctx: Context) -> str:
    """Tells subscriptions/listen streams that the tool list changed (it did not)."""
    await ctx.notify_tools_changed()
    return "told"


@server.tool()
async def change_later(seconds: float, ctx: Context) -> str:
    """After `seconds`, outside any request: tells the listen streams (2026-07-28) and the
    session (legacy) that the tool list changed."""

    async def later() -> None:
        await anyio.sleep(seconds)
        await ctx.notify_tools_changed()
        try:
            await ctx.session.send_tool_list_changed()
        except Exception:  # a modern request's session is gone once it was answered
            pass

    task = asyncio.get_running_loop().create_task(later())
    _updating.add(task)
    task.add_done_callback(_updating.discard)
    return f"changing in {seconds} s"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tells subscriptions/listen streams that the resource changed."""
    await ctx.notify_resource_updated(uri)
    return f"touched {uri}"


def _ask_model(text: str) -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=f"Summarize: {text}"))],
        max_tokens=50,
    )


@server.tool()
async def summarize(text: str, sampled: Annotated[types.CreateMessageResult, Resolve(_ask_model)]) -> str:
    """Asks the client's model (sampling) to summarize the text; returns what it said."""
    content = sampled.content
    said = content.text if isinstance(content, types.TextContent) else str(content)
    return f"summary by {sampled.model}: {said}"


class Name(BaseModel):
    name: str


def _ask_name() -> Elicit[Name]:
    return Elicit("Who is there?", Name)


@server.tool()
async def knock(who: Annotated[Name, Resolve(_ask_name)]) -> str:
    """Asks who is there (elicitation); greets them."""
    return f"Hello, {who.name}!"


def _ask_roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def roots(listed: Annotated[types.ListRootsResult, Resolve(_ask_roots)]) -> str:
    """Asks the client for its roots (roots/list); returns their URIs, one per line."""
    return "\n".join(str(root.uri) for root in listed.roots) or "(no roots)"


@server.tool()
def headers(ctx: Context) -> str:
    """The request's Authorization and X-Team headers, as the SDK hands them to the tool."""
    seen = ctx.headers
    if seen is None:
        return "no headers"
    return " ".join(f"{name}={seen.get(name, '-')}" for name in ("authorization", "x-team"))


@server.resource("interop://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed text."""
    return "hello from the python sdk"


@server.prompt()
def greet(name: str) -> str:
    """Asks to greet someone."""
    return f"Please greet {name}."


@server.completion()
async def complete(ref, argument, context):
    """Completes greet's name."""
    from mcp_types import Completion

    names = ["Ada", "Alan", "Grace"]
    if argument.name != "name":
        return None
    return Completion(values=[n for n in names if n.startswith(argument.value)], total=None, has_more=False)


def _require_bearer(app, token: str):
    """The app behind a check: an HTTP request without `Authorization: Bearer <token>` is 401."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope, receive, send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            await send({"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"a bearer token is required"})
            return
        await app(scope, receive, send)

    return guarded


def main() -> None:
    mode = sys.argv[1]
    if mode == "stdio":
        server.run("stdio")
        return
    port = int(sys.argv[2])
    token = os.environ.get("INTEROP_BEARER")
    if mode == "http-sse":
        server.run("sse", host="127.0.0.1", port=port)
        return
    if token is None:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=port,
            json_response=mode == "json",
            stateless_http=mode == "stateless",
        )
        return
    import uvicorn

    app = server.streamable_http_app(json_response=mode == "json", stateless_http=mode == "stateless", host="127.0.0.1")
    uvicorn.run(_require_bearer(app, token), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
