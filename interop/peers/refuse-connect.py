"""An HTTP CONNECT proxy on 127.0.0.1 that reads every request head and answers it with one
status (502: a gateway that cannot reach the target), then closes the connection.

    python refuse-connect.py PORT STATUS TAG
"""

import socket
import sys
import threading


def refuse(connection, status):
    with connection:
        head = b""
        while b"\r\n\r\n" not in head:
            data = connection.recv(4096)
            if not data:
                return
            head += data
        connection.sendall(
            b"HTTP/1.1 %d Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" % status
        )


listener = socket.create_server(("127.0.0.1", int(sys.argv[1])))
while True:
    connection, _ = listener.accept()
    threading.Thread(target=refuse, args=(connection, int(sys.argv[2])), daemon=True).start()
