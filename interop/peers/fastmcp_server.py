"""A small MCP server on FastMCP (PyPI `fastmcp`), for the interop rows. It adds no behaviour
of its own: what a row observes is FastMCP's (its banner and logs included).

    python fastmcp_server.py stdio
    python fastmcp_server.py http PORT     (streamable HTTP on 127.0.0.1:PORT/mcp)
    python fastmcp_server.py sse PORT      (the HTTP+SSE transport of 2024-11-05 on
                                            127.0.0.1:PORT/sse, FastMCP's transport="sse")

Tools: echo(text), add(a, b), fail(reason) (raises ToolError: isError: true), sleep(seconds),
get_weather(city) (returns a dataclass Weather: FastMCP derives the tool's outputSchema from
the annotation and sends the value as structuredContent beside its JSON text).
Resource interop://greeting; prompt greet(name).
"""

import sys
from dataclasses import dataclass

import anyio
from fastmcp import FastMCP
from fastmcp.exceptions import ToolError

server = FastMCP(name="interop-fastmcp", version="1.0.0")


@server.tool
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool
def fail(reason: str) -> str:
    """Always fails, with the reason as the tool's error text."""
    raise ToolError(f"failed on purpose: {reason}")


@server.tool
async def sleep(seconds: float) -> str:
    """Answers after the given number of seconds."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@dataclass
class Weather:
    """The weather in a city."""

    temperature: float
    conditions: str
    humidity: float


@server.tool
def get_weather(city: str) -> Weather:
    """A fixed forecast for any city."""
    return Weather(temperature=21.5, conditions=f"sunny in {city}", humidity=40.0)


@server.resource("interop://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed text."""
    return "hello from fastmcp"


@server.prompt
def greet(name: str) -> str:
    """Asks to greet someone."""
    return f"Please greet {name}."


def main() -> None:
    mode = sys.argv[1]
    if mode == "stdio":
        server.run("stdio")
        return
    server.run(mode, host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
