"""An HTTP+SSE server (the transport of 2024-11-05) that stalls where a real one goes wrong:
GET /sse opens the event stream (200, text/event-stream) and keeps it alive with a comment
every 200 ms, but never sends the `endpoint` event; every POST is answered 405, as an
HTTP+SSE server answers one to its stream's URL. Binds 127.0.0.1 only.

    python stall-sse.py PORT TAG
"""

import http.server
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.send_header("Allow", "GET")
        self.end_headers()

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            while True:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            return


server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.daemon_threads = True
server.serve_forever()
