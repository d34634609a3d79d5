"""An HTTP+SSE server (the transport of 2024-11-05) that goes wrong where real ones do. GET
/sse opens the event stream (200, text/event-stream); what follows depends on MODE:

    silent     the stream stays alive (a comment every 200 ms) and never names its endpoint
    elsewhere  the endpoint event names another origin (127.0.0.1:ELSEWHERE_PORT/messages),
               whose listener records any connection in ELSEWHERE_FILE
    closes     the endpoint is named (/messages?session_id=1); the first POST to it is answered
               202, then the stream ends without the answer

A POST to /sse is answered 405, as an HTTP+SSE server answers one to its stream's URL. Binds
127.0.0.1 only.

    python stall-sse.py PORT TAG [MODE [ELSEWHERE_PORT ELSEWHERE_FILE]]
"""

import http.server
import socket
import sys
import threading
import time

PORT = int(sys.argv[1])
MODE = sys.argv[3] if len(sys.argv) > 3 else "silent"
posted = threading.Event()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if self.path.startswith("/messages"):
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            posted.set()
            return
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.send_header("Allow", "GET")
        self.end_headers()

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        try:
            if MODE == "elsewhere":
                endpoint = f"http://127.0.0.1:{sys.argv[4]}/messages?session_id=1"
                self.wfile.write(f"event: endpoint\ndata: {endpoint}\n\n".encode())
            elif MODE == "closes":
                posted.clear()
                self.wfile.write(b"event: endpoint\ndata: /messages?session_id=1\n\n")
                self.wfile.flush()
                posted.wait(30)
                return
            while True:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            return


def elsewhere(port, record):
    listener = socket.create_server(("127.0.0.1", port))
    while True:
        connection, _ = listener.accept()
        with open(record, "a") as out:
            out.write("connected\n")
        connection.close()


if MODE == "elsewhere":
    threading.Thread(target=elsewhere, args=(int(sys.argv[4]), sys.argv[5]), daemon=True).start()
server = http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
server.daemon_threads = True
server.serve_forever()
