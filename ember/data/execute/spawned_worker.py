"""The entry point of a fresh pool worker (`spawned.py`): ``python -m ember.data.execute.spawned_worker FD``.

A module of its own that nothing imports: ``-m`` of `spawned` itself would run a module that importing
ember.data has already loaded (Python warns, and the worker would hold two copies of it).
"""

import sys

from ember.data.execute.spawned import main

if __name__ == "__main__":
    main(sys.argv[1:])
