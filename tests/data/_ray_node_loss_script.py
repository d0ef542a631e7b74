"""Driver for the node-loss test: joins the cluster at argv[1], runs the pipeline, prints the outcome.

Run in its own process so that a hang cannot outlive the test (the test kills it after its timeout).
Prints one line "RESULT <json>" (Ray may print its own lines too): {"rows": ..., "counts": {...}} when the
pipeline completed, or {"error": type, "message": first line} when ember raised.
"""

from __future__ import annotations

import json
import os
import sys

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

import ray  # noqa: E402

import ember.data  # noqa: E402
from ember.errors import EmberError  # noqa: E402
from tests.data._ray_udfs import SlowScale  # noqa: E402

address, source, markers, out = sys.argv[1:5]
ray.init(address=address, _node_ip_address="127.0.0.1", log_to_driver=False)
ray.data.DataContext.get_current().enable_progress_bars = False
ember.data.DataContext.get_current().execution = "ray"
try:
    ds = (
        ember.data.read_parquet(source)
        .map_batches(
            SlowScale, batch_size=20, concurrency=2, fn_constructor_args=(2.0, markers), max_task_retries=3
        )
        .random_shuffle(seed=1)
        .groupby("key")
        .count()
    )
    ds.write_parquet(out)
    rows = ember.data.read_parquet(out).take_all()
    print(
        "RESULT",
        json.dumps({"rows": len(rows), "counts": {str(r["key"]): r["count()"] for r in rows}}),
        flush=True,
    )
except EmberError as e:
    print("RESULT", json.dumps({"error": type(e).__name__, "message": str(e)}), flush=True)
finally:
    ray.shutdown()
