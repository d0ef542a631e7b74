"""With execution="ray", Ray tasks write their files straight into S3 (moto): the objects equal a local
write's, the driver commits the manifest, and a failed task leaves no object behind."""

from __future__ import annotations

import os

import pytest
from _s3 import keys, s3_client

import ember.data


@pytest.fixture(scope="module")
def ray_with_s3(s3_server):
    """Ray started after the S3 server, so its workers inherit the AWS_* variables that point at it."""
    if "ray" in os.environ.get("EMBER_SKIP", ""):
        pytest.skip("EMBER_SKIP=ray")
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local",
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        num_cpus=2,
        object_store_memory=128 * 1024 * 1024,
        log_to_driver=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()


def on_ray(fn):
    context = ember.data.DataContext.get_current()
    before, context.execution = context.execution, "ray"
    try:
        return fn()
    finally:
        context.execution = before


def objects(bucket: str, prefix: str) -> dict[str, bytes]:
    client = s3_client()
    return {
        k.removeprefix(prefix): client.get_object(Bucket=bucket, Key=k)["Body"].read()
        for k in keys(bucket, prefix)
        if "/_" not in k
    }


def test_ray_tasks_write_the_objects_a_local_write_makes(ray_with_s3, bucket):
    ds = ember.data.from_items([{"x": i, "s": f"r{i}"} for i in range(40)], override_num_blocks=4)
    ds.write_parquet(f"s3://{bucket}/local", min_rows_per_file=15)
    on_ray(lambda: ds.write_parquet(f"s3://{bucket}/ray", min_rows_per_file=15))
    ours = objects(bucket, "ray/")
    assert list(ours) == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert ours == objects(bucket, "local/")
    assert "ray/_ember_write.json" in keys(bucket, "ray/")
    assert ember.data.read_parquet(f"s3://{bucket}/ray").count() == 40


def test_a_failed_ray_write_leaves_no_object(ray_with_s3, bucket):
    def explode(row):
        if row["id"] == 7:
            raise ValueError("row 7")
        return row

    with pytest.raises(Exception, match="row 7"):
        on_ray(
            lambda: (
                ember.data.range(10, override_num_blocks=5).map(explode).write_parquet(f"s3://{bucket}/bad")
            )
        )
    assert [k for k in keys(bucket, "bad/") if not k.endswith("_ember_write.json")] == []
