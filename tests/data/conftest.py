"""Local stand-ins for the guide's s3:// example data, generated into a temporary folder; a one-node,
loopback Ray per test module for the tests that compare with Ray Data."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # read when Ray is first imported: stay on 127.0.0.1
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


@pytest.fixture(scope="module")
def local_ray():
    """Ray on this machine only (2 CPUs, a 128 MiB object store), started for one test module and stopped."""
    if "ray" in os.environ.get("EMBER_SKIP", ""):
        pytest.skip("EMBER_SKIP=ray")
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        ray.shutdown()
    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, num_cpus=2,
             object_store_memory=128 * 1024 * 1024, log_to_driver=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture
def ray_execution(local_ray):
    """``ray_execution(fn)``: fn() run with ``DataContext.execution = "ray"``; the setting is restored after."""
    import ember.data

    context = ember.data.DataContext.get_current()

    def run(fn):
        before, context.execution = context.execution, "ray"
        try:
            return fn()
        finally:
            context.execution = before

    return run


@pytest.fixture(scope="session")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("example-data")


@pytest.fixture(scope="session")
def simple_images(data_root):
    """ray-example-data/image-datasets/simple: small 32x32 RGB images."""
    from PIL import Image

    folder = data_root / "image-datasets" / "simple"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(folder / f"image{i}.png")
    return str(folder)


@pytest.fixture(scope="session")
def batoidea(data_root):
    """ray-example-data/batoidea/JPEGImages: JPEGs named by their integer label."""
    from PIL import Image

    folder = data_root / "batoidea" / "JPEGImages"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    for label in range(1, 5):
        size = (40 + 8 * label, 48)
        Image.fromarray(rng.integers(0, 255, (*size, 3), dtype=np.uint8)).save(folder / f"{label}.jpg")
    return str(folder)


@pytest.fixture(scope="session")
def breast_cancer_csv(data_root):
    """air-example-data/breast_cancer.csv: 30 feature columns and ``target``."""
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame
    path = data_root / "breast_cancer.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.fixture(scope="session")
def simple_txt(data_root):
    path = data_root / "simple.txt"
    path.write_text("this is the first line\nthis is the second line\nthis is the last line\n")
    return str(path)
