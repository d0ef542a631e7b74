"""A class UDF for tests/data/test_pools_where_ray_runs.py, in a module of its own so that a fresh worker
unpickling it imports only numpy (not the test module and what that imports)."""

import numpy as np


class WhereAmI:
    """Marks each row with whether its worker was forked by ember's zygote (`ember.processes.zygote_main`)."""

    def __call__(self, batch):
        with open("/proc/self/cmdline", "rb") as f:
            spawned = b"ember.processes.zygote_main" in f.read()
        return {"id": batch["id"], "spawned": np.full(len(batch["id"]), spawned)}
