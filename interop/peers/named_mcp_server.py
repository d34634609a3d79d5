"""A small MCP server on the Python SDK (PyPI `mcp`, 2.x) that answers under a host name
instead of an address, for the proxy rows: it listens on 127.0.0.1 only, and its DNS
rebinding protection (kept on) allows the Host header `NAME:PORT` alone, so a request that
reached it as `http://127.0.0.1:PORT` is refused (421) and one sent for the name is served.

    python named_mcp_server.py NAME PORT                 (plain HTTP, 127.0.0.1:PORT/mcp)
    python named_mcp_server.py NAME PORT CERT.pem KEY.pem (HTTPS with that certificate)

Tools: echo(text). The SDK's default answers (event streams, a session id).
"""

import sys

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

server = MCPServer(name="interop-named", version="1.0.0")


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


def main() -> None:
    name, port = sys.argv[1], int(sys.argv[2])
    tls = sys.argv[3:5]
    app = server.streamable_http_app(
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{name}:{port}"],
        ),
        host="127.0.0.1",
    )
    options = {"ssl_certfile": tls[0], "ssl_keyfile": tls[1]} if tls else {}
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", **options)


if __name__ == "__main__":
    main()
