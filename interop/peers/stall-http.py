"""An HTTP server on 127.0.0.1 that accepts every connection, reads what comes, and never
answers anything.

    python stall-http.py PORT TAG
"""

import socket
import sys
import threading


def drain(connection):
    with connection:
        while connection.recv(65536):
            pass


listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
while True:
    connection, _ = listener.accept()
    threading.Thread(target=drain, args=(connection,), daemon=True).start()
