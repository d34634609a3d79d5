"""A stdio MCP server that reads every line and never answers any.

    python stall-stdio.py TAG

TAG is unused: it marks the command line for pgrep.
"""

import sys

for _ in sys.stdin:
    pass
# stdin closed: still never answer, never exit on our own.
import time  # noqa: E402

while True:
    time.sleep(3600)
