"""The same inference pipeline on a (loopback) Ray cluster, through Ray Data actor pools."""

from __future__ import annotations

import os

# Ray reads these when it is first imported: this single machine is no cluster, and reports nothing.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
import pytest  # noqa: E402

import ember.data  # noqa: E402
from ember.inference import predict_to_parquet  # noqa: E402
from tests.inference._model import Scale  # noqa: E402  (importable by name in Ray's workers)
from tests.inference.conftest import MEAN, STD  # noqa: E402

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def loopback_ray():
    if "ray" in os.environ.get("EMBER_SKIP", ""):
        pytest.skip("EMBER_SKIP=ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(
        address="local",
        _node_ip_address="127.0.0.1",
        include_dashboard=False,
        num_cpus=2,
        log_to_driver=False,
    )
    try:
        assert {node["NodeManagerAddress"] for node in ray.nodes()} == {"127.0.0.1"}
        ray.data.DataContext.get_current().enable_progress_bars = False
        yield ray
    finally:
        ray.shutdown()


def test_class_map_batches_and_ember_predict_run_on_ray_actor_pools(
    loopback_ray, fashion_parquet, trained_ckpt, fashion_test, tmp_path
):
    ds = ember.data.read_parquet(str(fashion_parquet)).map_batches(
        Scale, batch_size=200, concurrency=2, fn_constructor_args=(2.0,)
    )
    ray_ds = ds.to_ray()
    assert isinstance(ray_ds, ray.data.Dataset)
    rows = ray_ds.take_all()  # 2 actors of 2/3 CPU each + readers fit on 2 CPUs: no deadlock
    images = fashion_test[0][:3000]
    assert [r["id"] for r in rows] == list(range(3000))
    np.testing.assert_allclose([r["mean"] for r in rows], images.reshape(3000, -1).mean(1) * 2.0, rtol=1e-6)
    assert os.getpid() not in {r["pid"] for r in rows}  # computed in Ray actors, not here

    # `ember predict --ray`: the same job, the same outputs as the local pool's
    local = predict_to_parquet(
        str(fashion_parquet),
        str(tmp_path / "local"),
        str(trained_ckpt),
        workers=2,
        scale=1 / 255,
        normalize=(MEAN, STD),
        shape=(1, 28, 28),
        progress=False,
        model="tests.inference._model.ClassicNet",
    )
    on_ray = predict_to_parquet(
        str(fashion_parquet),
        str(tmp_path / "ray"),
        str(trained_ckpt),
        workers=2,
        scale=1 / 255,
        normalize=(MEAN, STD),
        shape=(1, 28, 28),
        progress=False,
        ray_address="",
        model="tests.inference._model.ClassicNet",
    )
    assert on_ray.rows == local.rows == 3000 and len(on_ray.files) == 12
    a, b = pq.read_table(tmp_path / "local"), pq.read_table(tmp_path / "ray")
    assert a["id"].to_pylist() == b["id"].to_pylist() == list(range(3000))
    np.testing.assert_allclose(
        a["output"].combine_chunks().to_numpy_ndarray(),
        b["output"].combine_chunks().to_numpy_ndarray(),
        atol=1e-5,
    )
    assert ember.data.DataContext.get_current().execution == "auto"  # only that job ran on Ray
