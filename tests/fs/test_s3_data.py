"""ember.data readers and writers on a real S3-compatible server (moto), memory:// and file://."""

from __future__ import annotations

import time

import numpy as np
import pytest
from _s3 import keys, s3_client, start_moto, stop

import ember.data
from ember.errors import StorageError


def test_server_starts_within_a_few_seconds(s3_server):
    assert s3_server["startup_s"] < 8, s3_server  # about 1 s on a quiet machine, 4-5 s on a loaded one


def test_parquet_write_and_read_round_trip(bucket):
    ds = ember.data.from_items([{"x": i, "v": np.arange(3, dtype=np.float32) * i} for i in range(50)])
    written = ds.repartition(3).write_parquet(f"s3://{bucket}/tables/t")
    assert len(written) == 3
    names = keys(bucket, "tables/t/")
    assert names == sorted(
        [f"tables/t/part-0000{i}.parquet" for i in range(3)] + ["tables/t/_ember_write.json"]
    )
    rows = ember.data.read_parquet(f"s3://{bucket}/tables/t").take_all()
    assert sorted(r["x"] for r in rows) == list(range(50))
    assert all(np.array_equal(r["v"], np.arange(3, dtype=np.float32) * r["x"]) for r in rows)
    ember.data.range(4).write_parquet(f"s3://{bucket}/tables/t", mode="overwrite")
    assert ember.data.read_parquet(f"s3://{bucket}/tables/t").count() == 4


def test_every_writer_and_reader_on_s3(bucket):
    ds = ember.data.from_items([{"a": i, "b": f"s{i}"} for i in range(10)])
    ds.write_csv(f"s3://{bucket}/csv")
    ds.write_json(f"s3://{bucket}/json")
    ember.data.from_numpy(np.arange(12).reshape(4, 3)).write_numpy(f"s3://{bucket}/npy", column="data")
    assert sorted(r["a"] for r in ember.data.read_csv(f"s3://{bucket}/csv").take_all()) == list(range(10))
    assert sorted(r["b"] for r in ember.data.read_json(f"s3://{bucket}/json").take_all()) == sorted(
        f"s{i}" for i in range(10)
    )
    back = ember.data.read_numpy(f"s3://{bucket}/npy").take_all()
    assert np.array_equal(np.stack([r["data"] for r in back]), np.arange(12).reshape(4, 3))
    s3_client().put_object(Bucket=bucket, Key="text/a.txt", Body=b"one\ntwo\n")
    assert [r["text"] for r in ember.data.read_text(f"s3://{bucket}/text").take_all()] == ["one", "two"]
    assert ember.data.read_binary_files(f"s3://{bucket}/text").take_all()[0]["bytes"] == b"one\ntwo\n"


def test_a_failed_write_leaves_no_object(bucket):
    def explode(row):
        if row["id"] == 7:
            raise ValueError("boom")
        return row

    with pytest.raises(Exception, match="boom"):
        ember.data.range(10).map(explode).write_parquet(f"s3://{bucket}/bad")
    assert [k for k in keys(bucket, "bad/") if k.endswith(".parquet")] == []


def test_memory_and_file_urls(tmp_path):
    ember.data.range(5).write_parquet("memory://ember-test/p")
    assert sorted(r["id"] for r in ember.data.read_parquet("memory://ember-test/p").take_all()) == list(
        range(5)
    )
    ember.data.range(6).write_parquet(f"file://{tmp_path}/q")
    assert (tmp_path / "q" / "part-00000.parquet").is_file()
    assert ember.data.read_parquet(f"file://{tmp_path}/q").count() == 6


def test_missing_bucket_is_one_line(s3_server):
    with pytest.raises(
        StorageError, match=r"s3://no-such-bucket-x/data: bucket 'no-such-bucket-x' does not exist"
    ):
        ember.data.read_parquet("s3://no-such-bucket-x/data")
    with pytest.raises(StorageError, match="does not exist"):
        ember.data.range(3).write_parquet("s3://no-such-bucket-y/out")


def test_unreachable_endpoint_is_one_line_within_seconds(monkeypatch):
    from _s3 import free_port

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens there
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    started = time.monotonic()
    with pytest.raises(StorageError) as error:
        ember.data.read_parquet("s3://somewhere/data")
    assert time.monotonic() - started < 15
    message = str(error.value)
    assert (
        message.startswith("s3://somewhere/data: the endpoint http://127.0.0.1:")
        and "did not answer" in message
    )
    assert "\n" not in message


def test_bad_credentials_are_one_line(s3_server, monkeypatch):
    """A second server that checks signatures (moto's IAM mode): an unknown access key is refused."""
    process, url, _ = start_moto({"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
        started = time.monotonic()
        with pytest.raises(
            StorageError, match=r"s3://guarded/data: the credentials were refused; check AWS_ACCESS_KEY_ID"
        ):
            ember.data.read_parquet("s3://guarded/data")
        assert time.monotonic() - started < 15
    finally:
        stop(process)
