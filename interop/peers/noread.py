"""A stdio MCP server that answers the opening exchange and then never reads stdin again.

    python noread.py TAG

It answers server/discover (the modern era) or initialize (and takes
notifications/initialized), then stops reading, so a client's next request line of more than a
pipe's buffer (64 KiB) blocks in write(2) until the client gives up. TAG is unused: it marks
the command line for pgrep.
"""

import json
import sys
import time

SERVER_INFO = {"name": "interop-noread", "version": "1.0.0"}


def answer(message_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message_id, "result": result}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "server/discover":
        answer(message["id"], {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
        })
        break
    if method == "initialize":
        answer(message["id"], {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": SERVER_INFO,
        })
    if method == "notifications/initialized":
        break

# Never read again; never exit on our own.
while True:
    time.sleep(3600)
