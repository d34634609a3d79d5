"""Prints a free TCP port on 127.0.0.1 for a row's peer to listen on.

A port found free (bound to port 0, then let go) is the peer's only once the peer binds it,
and the matrix runs rows at once (each row on both drivers side by side): another row could
be handed the same port in between, and one row's checks would then talk to the other row's
peer. So the ports handed out in one matrix run are kept in $INTEROP_PORTS (run.sh makes the
file), under a lock, and none is handed out twice. Without $INTEROP_PORTS (a row run on its
own), a free port as found.
"""

import fcntl
import os
import socket


def free():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    path = os.environ.get("INTEROP_PORTS")
    if not path:
        print(free())
        return
    with open(path, "a+", encoding="ascii") as taken:
        fcntl.flock(taken, fcntl.LOCK_EX)
        taken.seek(0)
        handed = set(taken.read().split())
        port = free()
        while str(port) in handed:
            port = free()
        taken.write(f"{port}\n")
    print(port)


if __name__ == "__main__":
    main()
