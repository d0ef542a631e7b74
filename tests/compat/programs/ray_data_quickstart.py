"""Ray Data's doc page "Ray Data Quickstart" (data/quickstart): load, transform with map_batches, consume with
iter_batches, save with write_parquet. The page reads iris.csv from S3; here the same columns come from
from_items (seeded numbers), so it runs with no network. Run unchanged by Ray and by ember
(`python -m ember ray_data_quickstart.py`); the last line is RESULT {...}.
"""

import json
import os

import numpy as np
import pyarrow.parquet as pq
import ray

rng = np.random.default_rng(0)
items = [
    {
        "sepal length (cm)": float(a),
        "sepal width (cm)": float(b),
        "petal length (cm)": float(c),
        "petal width (cm)": float(d),
        "target": int(t),
    }
    for a, b, c, d, t in zip(
        rng.uniform(4, 8, 30).round(1),
        rng.uniform(2, 4.5, 30).round(1),
        rng.uniform(1, 7, 30).round(1),
        rng.uniform(0.1, 2.5, 30).round(1),
        rng.integers(0, 3, 30),
        strict=True,
    )
]
ds = ray.data.from_items(items)


def transform_batch(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    vec_a = batch["petal length (cm)"]
    vec_b = batch["petal width (cm)"]
    batch["petal area (cm^2)"] = vec_a * vec_b
    return batch


transformed_ds = ds.map_batches(transform_batch)
print(transformed_ds.materialize())

batch_sizes = [
    len(batch["target"]) for batch in transformed_ds.iter_batches(batch_size=8, batch_format="numpy")
]
areas = sorted(round(float(row["petal area (cm^2)"]), 6) for row in transformed_ds.take_all())

transformed_ds.write_parquet(os.path.abspath("iris"))
written = pq.read_table("iris")
print(
    "RESULT "
    + json.dumps(
        {
            "columns": sorted(transformed_ds.columns()),
            "count": transformed_ds.count(),
            "batch_sizes": batch_sizes,
            "areas": areas,
            "parquet_rows": written.num_rows,
            "parquet_columns": sorted(written.column_names),
            "parquet_in_folder": any(name.endswith(".parquet") for name in os.listdir("iris")),
        },
        sort_keys=True,
    )
)
