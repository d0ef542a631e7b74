"""The entry point of the zygote that forks pool workers where Ray runs (`spawned.py`):
``python -m ember.data.execute.spawned_worker SOCKET_FD DRIVER_PID``.

A module of its own that nothing imports: ``-m`` of `spawned` itself would run a module that importing
ember.data has already loaded (Python warns, and the worker would hold two copies of it).
"""

import sys

from ember.data.execute.spawned import main

if __name__ == "__main__":
    main(sys.argv[1:])
