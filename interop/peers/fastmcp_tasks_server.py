"""A small MCP server on FastMCP with the tasks extension (PyPI `fastmcp-tasks`), for the
interop rows. It adds no behaviour of its own: polling, status and results are the
extension's (Docket's in-memory backend).

    python fastmcp_tasks_server.py PORT     (streamable HTTP on 127.0.0.1:PORT/mcp, 2026-07-28)

Tools: sleep(seconds) may run as a task (the server makes one when the client declares the
extension); batch(seconds) must (a client without the extension gets -32021). Both answer
"slept <seconds>". ask() must run as a task and asks for a name first (a form elicitation
whose name defaults to "Ada", the task `input_required` until `tasks/update` answers), then
answers "hello <name>" (or "declined" / "cancelled"). remaining() says what the request's
`_meta` carried under `dev.mcp-deadline/remainingMs`. The server suggests polling every
500 ms.
"""

import sys
from datetime import timedelta

import anyio
import mcp_types
from fastmcp import Context, FastMCP
from fastmcp.utilities.tasks import TaskConfig
from fastmcp_tasks import TasksExtension

server = FastMCP(name="interop-fastmcp-tasks", version="1.0.0")
server.add_extension(TasksExtension(url="memory://"))
EVERY = timedelta(milliseconds=500)


@server.tool(task=TaskConfig(mode="optional", poll_interval=EVERY))
async def sleep(seconds: float) -> str:
    """Sleeps, then says so."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(task=TaskConfig(mode="required", poll_interval=EVERY))
async def batch(seconds: float) -> str:
    """Sleeps as a task only, then says so."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(task=TaskConfig(mode="required", poll_interval=EVERY))
async def ask(ctx: Context) -> str | mcp_types.InputRequiredResult:
    """Asks who is there (the guard pattern), then greets them."""
    answers = ctx.input_responses or {}
    if "name" not in answers:
        form = mcp_types.ElicitRequestFormParams(
            message="Who is there?",
            requested_schema={
                "type": "object",
                "properties": {"name": {"type": "string", "default": "Ada"}},
                "required": ["name"],
            },
        )
        request = mcp_types.ElicitRequest(params=form)
        return mcp_types.InputRequiredResult(input_requests={"name": request})
    answer = answers["name"]
    answer = answer if isinstance(answer, dict) else answer.model_dump()
    if answer.get("action") != "accept":
        return str(answer.get("action"))
    return f"hello {(answer.get('content') or {}).get('name')}"


@server.tool
def remaining(ctx: Context) -> str:
    """Says what the request's `_meta` told of the client's budget (a key of mcp-call's own)."""
    meta = ctx.request_context.meta if ctx.request_context else None
    extra = meta.model_dump() if meta is not None and hasattr(meta, "model_dump") else (meta or {})
    return f"remainingMs={extra.get('dev.mcp-deadline/remainingMs')}"


if __name__ == "__main__":
    server.run(transport="http", host="127.0.0.1", port=int(sys.argv[1]), show_banner=False)
