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


# One local Ray serves every module that asks for `local_ray` in a row: starting Ray and its first workers
# takes 10-15 s here, once per module was minutes of the suite. The modules that ask for it run one after
# the other (pytest_collection_modifyitems below), and Ray is stopped after the last test of the last of
# them (pytest_runtest_teardown), so every other test still runs with no Ray started.
_STARTED: dict[str, str] = {}  # "gcs": the address of the Ray this conftest started, while it runs
_RAY_MODULES: set = set()  # the paths of the test modules with a test that uses local_ray


def _uses_local_ray(item) -> bool:
    return "local_ray" in getattr(item, "fixturenames", ())


@pytest.fixture(scope="module")
def local_ray():
    """Ray on this machine only (2 CPUs, a 128 MiB object store), shared by the modules that use it in a
    row."""
    if "ray" in os.environ.get("EMBER_SKIP", ""):
        pytest.skip("EMBER_SKIP=ray")
    ray = pytest.importorskip("ray")
    if not _ours_is_running(ray):
        if ray.is_initialized():  # someone else's Ray (another fixture or a test's own)
            ray.shutdown()
        ray.init(
            address="local",
            _node_ip_address="127.0.0.1",
            include_dashboard=False,
            num_cpus=2,
            object_store_memory=128 * 1024 * 1024,
            log_to_driver=False,
        )
        _STARTED["gcs"] = ray.get_runtime_context().gcs_address
        addresses = {node["NodeManagerAddress"] for node in ray.nodes()}
        assert addresses == {"127.0.0.1"}, f"the test Ray must be loopback-only, got {addresses}"
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray


def _ours_is_running(ray) -> bool:
    return (
        bool(_STARTED) and ray.is_initialized() and ray.get_runtime_context().gcs_address == _STARTED["gcs"]
    )


def _stop_local_ray() -> None:
    if _STARTED:
        import ray

        if _ours_is_running(ray):
            ray.shutdown()
        _STARTED.clear()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Stop the shared Ray once the next test is in a module that does not use it (or there is none)."""
    yield
    if _STARTED and (nextitem is None or nextitem.path not in _RAY_MODULES):
        _stop_local_ray()


def pytest_collection_modifyitems(session, config, items):
    """Run the tests/data modules that use `local_ray` after the others (each module's tests keep their
    order)."""
    here = os.path.dirname(__file__)
    positions = [i for i, item in enumerate(items) if str(item.path).startswith(here + os.sep)]
    _RAY_MODULES.clear()
    _RAY_MODULES.update(item.path for i in positions if _uses_local_ray(item := items[i]))
    ordered = sorted((items[i] for i in positions), key=lambda item: item.path in _RAY_MODULES)  # stable
    for i, item in zip(positions, ordered, strict=True):
        items[i] = item


@pytest.fixture(scope="module")
def ordered_ray(local_ray):
    """Ray Data set up so that its results compare with ember's: input order kept (ember's only order), no
    progress output; both settings restored after the module."""
    context = local_ray.data.DataContext.get_current()
    saved = (context.print_on_execution_start, context.execution_options.preserve_order)
    context.print_on_execution_start = False
    context.execution_options.preserve_order = True
    yield local_ray
    context.print_on_execution_start, context.execution_options.preserve_order = saved


@pytest.fixture
def ray_execution(local_ray):
    """``ray_execution(fn)``: fn() run with ``DataContext.execution = "ray"``; the setting is restored
    after."""
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
