"""The zygote's entry point (`zygote.py`): ``python -m ember.processes.zygote_main SOCKET_FD CALLER_PID
MODULES``.

A module of its own that nothing imports: ``-m`` of `zygote` itself would run a module that a preloaded
module may import too (Python warns, and each worker would hold two copies of it).
"""

import sys

from ember.processes.zygote import serve

if __name__ == "__main__":
    serve(sys.argv[1:])
