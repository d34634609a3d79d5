"""A black-holed address: a listener at HOST PORT (e.g. ::1 and the port a real peer serves on
127.0.0.1) that never accepts, its accept queue filled, so that the kernel drops every further
SYN and a connect to it hangs, as to a route that drops packets (broken IPv6, a VPN). Prints
`black hole ready` once a connect has been seen to get no answer, then holds it until killed.

    python blackhole.py HOST PORT
"""

import socket
import sys
import time

host, port = sys.argv[1], int(sys.argv[2])
family = socket.AF_INET6 if ":" in host else socket.AF_INET
listener = socket.socket(family, socket.SOCK_STREAM)
listener.bind((host, port))
# Room for one connection (Linux: the backlog plus one).
listener.listen(0)

# Filled by non-blocking connects (loopback answers a SYN within the call when there is room)
# until a blocking one gets no answer for 300 ms: then the queue is full and SYNs are dropped.
queued = []
while True:
    for _ in range(4):
        filler = socket.socket(family, socket.SOCK_STREAM)
        filler.setblocking(False)
        filler.connect_ex((host, port))
        queued.append(filler)
    probe = socket.socket(family, socket.SOCK_STREAM)
    probe.settimeout(0.3)
    try:
        probe.connect((host, port))
    except socket.timeout:
        break
    queued.append(probe)
    if len(queued) > 1024:
        sys.exit("the accept queue never filled: SYNs are not dropped here")

print("black hole ready", flush=True)
while True:
    time.sleep(3600)
