"""A legacy-era (2025-11-25) streamable HTTP MCP server on 127.0.0.1 that answers the
handshake and stalls every tools/call and the session's DELETE.

    python stall-close-http.py PORT TAG

A request without a session that is not initialize (the modern era's first request) gets 400;
initialize gets a JSON answer with a session id; notifications/initialized gets 202; a
tools/call, and a DELETE, are read and never answered (the connection stays open).
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SESSION = "interop-stall-close-session"
stalled = threading.Event()  # never set


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("stall-close-http: " + fmt % args + "\n")

    def send(self, status, body=None, headers=()):
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if body is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def stall(self):
        sys.stderr.write(f"stall-close-http: stalling {self.command}\n")
        while True:
            time.sleep(3600)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        message = json.loads(self.rfile.read(length) or b"{}")
        method = message.get("method")
        if method == "initialize":
            self.send(200, {
                "jsonrpc": "2.0",
                "id": message.get("id"),
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "interop-stall-close", "version": "1.0.0"},
                },
            }, [("Mcp-Session-Id", SESSION)])
        elif self.headers.get("Mcp-Session-Id") != SESSION:
            self.send(400, {"jsonrpc": "2.0", "id": None,
                            "error": {"code": -32000, "message": "Bad Request: no session"}})
        elif method == "notifications/initialized":
            self.send(202)
        else:
            self.stall()

    def do_DELETE(self):
        self.stall()

    def do_GET(self):
        self.send(405)


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
