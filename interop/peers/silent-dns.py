"""A DNS server that never answers: a UDP socket on port 53 of a loopback address, which
nothing reads (a silent VPN or captive network's resolver). Prints `listening` once bound.

    python silent-dns.py ADDRESS TAG
"""

import socket
import sys
import time

server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
server.bind((sys.argv[1], 53))
print("listening", flush=True)
while True:
    time.sleep(3600)
