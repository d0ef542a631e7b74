"""Child process for test_out_of_core: all-to-all operators on a parquet folder under a memory budget.

argv: data folder, scratch folder, budget in MB, mode ("run" prints results; "hang" stops inside a
spilled shuffle so the parent can SIGKILL it there).
"""

from __future__ import annotations

import json
import resource
import sys
import time

import ember.data

folder, scratch, budget_mb, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ctx = ember.data.DataContext.get_current()
ctx.memory_budget_bytes = budget_mb * 1024**2
ctx.scratch_dir = scratch
print(json.dumps({"imported_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}), flush=True)
ds = ember.data.read_parquet(folder)

if mode == "hang":
    batches = iter(ds.random_shuffle(seed=1).iter_batches(batch_size=100))
    next(batches)
    print(json.dumps({"inside": True}), flush=True)
    time.sleep(600)

results = {}
import numpy as np  # noqa: E402

seen = np.zeros(300_000, dtype=np.int64)
first = None
for batch in ds.random_shuffle(seed=3).select_columns(["id"]).iter_batches(batch_size=10_000):
    np.add.at(seen, batch["id"], 1)
    first = batch["id"][:100] if first is None else first
results["shuffle_is_permutation"] = bool((seen == 1).all())
results["shuffle_moved"] = first.tolist() != sorted(first.tolist())
previous, rows, ordered = None, 0, True
for batch in ds.sort(["key", "id"]).iter_batches(batch_size=10_000):
    pairs = batch["key"] * 1_000_000 + batch["id"]  # (key, id) as one comparable number
    ordered &= bool((np.diff(pairs) > 0).all()) and (previous is None or previous < pairs[0])
    previous, rows = pairs[-1], rows + len(pairs)
results["sorted"] = ordered and rows == 300_000
counts = ds.groupby("key").count().take_all()
results["group_rows"] = sum(r["count()"] for r in counts)
results["groups"] = len(counts)
results["peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(results), flush=True)
