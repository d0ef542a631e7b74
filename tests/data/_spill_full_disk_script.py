"""Child process of test_spill_errors: a shuffle that spills into SCRATCH, with every file limited to
LIMIT bytes (RLIMIT_FSIZE, as a full disk: writes fail with EFBIG); LIMIT 0 means no limit.

    python _spill_full_disk_script.py SCRATCH LIMIT
"""

import resource
import signal
import sys

import numpy as np

import ember.data

scratch, limit = sys.argv[1], int(sys.argv[2])
ctx = ember.data.DataContext.get_current()
ctx.memory_budget_bytes = 4 * 1024**2
ctx.scratch_dir = scratch
ds = ember.data.from_numpy(np.arange(400_000, dtype=np.int64).reshape(-1, 1) * np.ones((1, 8), np.int64))
if limit:
    # no bytecode cache from here on: Python would commit a .pyc cut short at the limit (its write does not
    # check the count), and every later import of that module would fail
    sys.dont_write_bytecode = True
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
print(sum(len(b["data"]) for b in ds.random_shuffle(seed=1).iter_batches(batch_size=10000)))
