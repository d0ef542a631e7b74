"""Every ``>>>`` example in the docstrings of Ray Data 2.60's public API, run on ray.data and on ember.data.

The examples are extracted from the installed Ray with ``doctest.DocTestFinder`` (one test per
docstring, its examples run in order in one namespace, as doctest runs them). Each docstring runs
twice: as written, on Ray, and with ``ray.data`` replaced by ``ember.data`` (``import ray`` stays,
for ``ray.put``/``ray.get``). What each example prints or displays is compared exactly, example by
example (Ray runs with ``preserve_order=True``, so its row order is defined and is ember's). An
example that raises must raise on both, with the same builtin exception class.

Substitutions (no network here): an ``s3://anonymous@...-example-data/<file>`` path is replaced, in
both runs, by a local file of the same kind built from public data (``LOCAL_DATA``); the example then
compares the two libraries on that file. ``/tmp/...`` and ``local:///tmp/...`` (where examples write)
become a fresh folder per library. An example that still names a remote path (``s3://bucket/...``
placeholders) is not run, on either library. A ``Dataset`` shown at the prompt is compared by kind
only (Ray shows a table preview or its plan, ember names its operators: docs/data.md, "repr"). Each
docstring starts from a copy of both libraries' DataContext (examples set it and do not reset it).

Docstrings that cannot run here are in ``SKIPPED`` with the reason, and the test that lists them
checks that every extracted docstring is either run or skipped for a stated reason.
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import os
import re
import sys

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow as pa  # noqa: E402
import pytest  # noqa: E402

import ember  # noqa: E402
import ember.data  # noqa: E402

pytest.importorskip("ray.data")
import ray  # noqa: E402 - ray.data is imported above

from tests.data.test_ray_parity import builtin_kind  # noqa: E402

#: Ray Data's public modules whose docstrings hold ``>>>`` examples.
RAY_MODULES = [
    "ray.data.dataset",
    "ray.data.read_api",
    "ray.data.iterator",
    "ray.data.grouped_data",
    "ray.data.aggregate",
    "ray.data.expressions",
    "ray.data.context",
    "ray.data.datatype",
    "ray.data.datasource.datasource",
    "ray.data.datasource.datasink",
    "ray.data.datasource.partitioning",
    "ray.data.datasource.file_based_datasource",
    "ray.data.stats",
]


def ray_docstrings() -> dict[str, doctest.DocTest]:
    """Every docstring with examples in ``RAY_MODULES``, by its dotted name."""
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {}
    for name in RAY_MODULES:
        for test in finder.find(importlib.import_module(name)):
            if test.examples and not test.name.split(".")[-1].startswith("_"):
                found[test.name] = test
    return found


DOCSTRINGS = ray_docstrings()

#: Local stand-ins for the example data in Ray's buckets (built by the ``example_data`` fixture).
LOCAL_DATA = (
    "iris.csv",
    "iris.parquet",
    "iris-csv",
    "iris-parquet",
    "iris.tsv",
    "train.jsonl",
    "log.json",
    "this.txt",
    "dow_jones.csv",
    "year=2022/month=09/sales.csv",
    "year=2022/month=09/sales.json",
    "different-extensions",
    "pdf-sample_0.pdf",
    "image-datasets/simple",
    "image-datasets/dir-partitioned",
    "batoidea",
    "batoidea/JPEGImages",
)

#: A path that would need the network.
REMOTE = re.compile(r"\b(s3|gs|gcs|abfss?|hf|https?)://")

_NO_REFS = "Ray object references (ray.put / ObjectRef blocks): ember.data runs without Ray's object store"
_RANDOM = "the output depends on Ray's random draws per task or task order (Ray's own doctest marks it +SKIP)"
_TF = "TensorFlow is not installed here (Ray needs it for this); ember.data has no TensorFlow conversions"
_WRITES = (
    "ember's write_* return the paths written (Ray's return None), so the shown value differs; the "
    "files themselves are compared with Ray's in test_writers*.py"
)
_ABSENT = "ember.data has no {} (absent in docs/data.md's coverage table)"
#: Docstrings whose examples cannot run here or cannot match, with the reason.
SKIPPED: dict[str, str] = {
    "ray.data.dataset.Dataset.get_internal_block_refs": _NO_REFS,
    "ray.data.dataset.Dataset.has_serializable_lineage": _ABSENT.format("has_serializable_lineage"),
    "ray.data.dataset.Dataset.iter_internal_ref_bundles": _NO_REFS,
    "ray.data.dataset.Dataset.random_sample": _RANDOM,
    "ray.data.dataset.Dataset.random_shuffle": _RANDOM,
    "ray.data.dataset.Dataset.randomize_block_order": _RANDOM,
    "ray.data.dataset.Dataset.sort": _NO_REFS + " (the example prints blocks through to_pandas_refs)",
    "ray.data.dataset.Dataset.streaming_train_test_split": (
        "Ray seeds the random split per Ray task (task index, seed), so its rows depend on Ray's block "
        "layout; ember keys it by the block's rows (ember/data/train_test.py)"
    ),
    "ray.data.dataset.Dataset.summary": "Ray's own example fails here (an optional dependency is missing)",
    "ray.data.dataset.Dataset.to_arrow_refs": _NO_REFS,
    "ray.data.dataset.Dataset.to_numpy_refs": _NO_REFS,
    "ray.data.dataset.Dataset.to_pandas_refs": _NO_REFS,
    "ray.data.dataset.Dataset.to_tf": _TF,
    "ray.data.dataset.Dataset.union": _RANDOM,
    "ray.data.dataset.Dataset.write_csv": _WRITES,
    "ray.data.dataset.Dataset.write_images": _WRITES,
    "ray.data.dataset.Dataset.write_json": _WRITES,
    "ray.data.dataset.Dataset.write_numpy": _WRITES,
    "ray.data.dataset.Dataset.write_orc": _WRITES,
    "ray.data.dataset.Dataset.write_parquet": _WRITES,
    "ray.data.dataset.Dataset.write_tfrecords": _TF,
    "ray.data.datasource.datasink.DummyOutputDatasink": "a test helper Ray exports; not part of ember.data",
    "ray.data.datasource.datasource.RandomIntRowDatasource": (
        "a test helper Ray exports; not part of ember.data"
    ),
    "ray.data.expressions.RandomExpr": (
        "random(seed=1234) (reseed_after_execution=True) is refused in one line: it needs Ray's execution "
        "index, which ember's fused tasks do not have (ember/data/expressions/generated.py)"
    ),
    "ray.data.expressions.monotonically_increasing_id": (
        "ids encode Ray's task index (+SKIP in Ray's own doctest)"
    ),
    "ray.data.expressions.random": _RANDOM,
    "ray.data.expressions.uuid": _RANDOM + " (random UUIDs)",
    "ray.data.iterator.DataIterator.iter_tf_batches": _TF,
    "ray.data.iterator.DataIterator.to_tf": _TF,
    "ray.data.read_api.from_arrow_refs": _NO_REFS,
    "ray.data.read_api.from_numpy_refs": _NO_REFS,
    "ray.data.read_api.from_pandas_refs": _NO_REFS,
    "ray.data.read_api.from_tf": _TF,
    "ray.data.read_api.read_audio": _ABSENT.format("read_audio"),
    "ray.data.read_api.read_avro": _ABSENT.format("read_avro"),
    "ray.data.read_api.read_clickhouse": _ABSENT.format("read_clickhouse"),
    "ray.data.read_api.read_datasource": "the example uses Ray's internal RangeDatasource",
    "ray.data.read_api.read_delta": _ABSENT.format("read_delta"),
    "ray.data.read_api.read_hudi": _ABSENT.format("read_hudi"),
    "ray.data.read_api.read_iceberg": _ABSENT.format("read_iceberg"),
    "ray.data.read_api.read_images": (
        "the images differ in size: Ray's schema() reports the first file's fixed shape, ember's the whole "
        "dataset's variable-shaped tensor type (what Ray's blocks combine into)"
    ),
    "ray.data.read_api.read_lance": _ABSENT.format("read_lance"),
    "ray.data.read_api.read_lerobot": _ABSENT.format("read_lerobot"),
    "ray.data.read_api.read_mcap": _ABSENT.format("read_mcap"),
    "ray.data.read_api.read_mongo": _ABSENT.format("read_mongo"),
    "ray.data.read_api.read_tfrecords": (
        "no local stand-in of iris.tfrecords (ember's TFRecord reader is compared in test_formats.py)"
    ),
    "ray.data.read_api.read_unity_catalog": _ABSENT.format("read_unity_catalog"),
    "ray.data.read_api.read_videos": _ABSENT.format("read_videos"),
    "ray.data.read_api.read_zarr": _ABSENT.format("read_zarr"),
}


#: Ray module paths whose ember twin lives elsewhere (substituted before ``ray.data`` -> ``ember.data``).
MODULE_PATHS = {"ray.data.datasource.partitioning": "ember.data"}


def to_ember(source: str) -> str:
    """The example with ray.data's names replaced by ember.data's (``ray`` itself stays)."""
    for theirs, ours in MODULE_PATHS.items():
        source = source.replace(theirs, ours)
    return re.sub(r"\bray\.data\b", "ember.data", source)


def with_local_data(source: str, data_root: str, scratch: str) -> str:
    """``s3://anonymous@<bucket>/<file>`` replaced by the local stand-in of ``<file>``, and ``/tmp/``
    (where examples write) by ``scratch``."""

    def local(match: re.Match) -> str:
        name = match.group(2)
        if name.rstrip("/") not in LOCAL_DATA:
            return match.group(0)
        return os.path.join(data_root, name)

    source = re.sub(
        r"(local://)?/tmp/", scratch.rstrip("/") + "/", source
    )  # first: the stand-ins are in /tmp too
    return re.sub(r"s3://anonymous@(ray|air)-example-data/([\w./=-]+)", local, source)


def shown(value: object) -> str:
    """What the prompt shows for ``value``, with a Dataset (whose repr differs on purpose) and an object
    repr with a memory address reduced to its kind."""
    if isinstance(value, (ray.data.Dataset, ember.data.Dataset)):
        return "<Dataset>"
    if isinstance(value, (ray.data.DataIterator, ember.data.DataIterator)):  # its repr shows its dataset's
        return "<DataIterator>"
    text = repr(value)
    if re.search(r" at 0x[0-9a-f]+>", text):
        return f"<{type(value).__name__} object>"
    return text


def run_docstring(test: doctest.DocTest, source_of, tmp_path) -> list[tuple[str, str]]:
    """(what was printed and shown, the builtin exception class raised or "") per example, in order;
    ("remote", "") for an example that names a remote path (not run)."""
    namespace = {"__name__": "__docstring__", "ray": ray, "ember": ember, "np": np, "pd": pd, "pa": pa}
    results = []
    displayed: list[str] = []
    hook = sys.displayhook
    sys.displayhook = lambda value: None if value is None else displayed.append(shown(value))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with fresh_contexts():
            for example in test.examples:
                source = source_of(example.source)
                if REMOTE.search(source):
                    results.append(("remote", ""))
                    continue
                displayed.clear()
                printed = io.StringIO()
                error = ""
                try:
                    with contextlib.redirect_stdout(printed):
                        exec(compile(source, "<docstring>", "single"), namespace)
                except Exception as raised:  # noqa: BLE001 - the error is what is compared
                    error = builtin_kind(raised).__name__
                results.append((printed.getvalue() + "".join(line + "\n" for line in displayed), error))
    finally:
        sys.displayhook = hook
        os.chdir(cwd)
    return results


@contextlib.contextmanager
def fresh_contexts():
    """Both libraries' process-wide DataContext as they were before, whatever the examples set."""
    ray_saved = ray.data.DataContext.get_current().copy()
    ember_saved = ember.data.DataContext.get_current().copy()
    try:
        yield
    finally:
        ray.data.DataContext._set_current(ray_saved)
        ember.data.DataContext._current = ember_saved


@pytest.fixture(scope="module")
def example_data(tmp_path_factory, simple_images, batoidea):
    """The local stand-ins of ``LOCAL_DATA`` in one folder, named as in Ray's bucket."""
    import pyarrow.parquet as pq
    from sklearn.datasets import load_iris

    root = tmp_path_factory.mktemp("ray-example-data")
    iris = load_iris(as_frame=True)
    frame = iris.frame.copy()
    frame.to_csv(root / "iris.csv", index=False)  # Ray's iris.csv: "sepal length (cm)", ..., "target"
    named = pd.DataFrame(
        {
            "sepal.length": frame.iloc[:, 0],
            "sepal.width": frame.iloc[:, 1],
            "petal.length": frame.iloc[:, 2],
            "petal.width": frame.iloc[:, 3],
            "variety": [str(iris.target_names[t]).capitalize() for t in iris.target],
        }
    )
    pq.write_table(pa.Table.from_pandas(named, preserve_index=False), root / "iris.parquet")
    (root / "iris-csv").mkdir()
    frame.iloc[:75].to_csv(root / "iris-csv" / "part-0.csv", index=False)
    frame.iloc[75:].to_csv(root / "iris-csv" / "part-1.csv", index=False)
    (root / "iris-parquet").mkdir()
    pq.write_table(
        pa.Table.from_pandas(named.iloc[:75], preserve_index=False), root / "iris-parquet" / "0.parquet"
    )
    pq.write_table(
        pa.Table.from_pandas(named.iloc[75:], preserve_index=False), root / "iris-parquet" / "1.parquet"
    )
    named.to_csv(root / "iris.tsv", sep="\t", index=False)
    (root / "train.jsonl").write_text(
        "".join(f'{{"input": "question {i}", "output": "answer {i}"}}\n' for i in range(4))
    )
    (root / "log.json").write_text(
        '{"timestamp": "2023-01-01T00:00:00", "size": 10}\n{"timestamp": "2023-01-02T12:30:00", "size": 20}\n'
    )
    (root / "this.txt").write_text("this is\na text\n\nfile\n")
    (root / "dow_jones.csv").write_text(
        "Date,Open,Close\n01/02/2020,28638.97,28868.80\n01/03/2020,28553.33,28634.88\n"
    )
    sales = root / "year=2022" / "month=09"
    sales.mkdir(parents=True)
    (sales / "sales.csv").write_text("order_number,quantity\n10107,30\n10121,34\n")
    (sales / "sales.json").write_text(
        '{"order_number": 10107, "quantity": 30}\n{"order_number": 10121, "quantity": 34}\n'
    )
    (root / "different-extensions").mkdir()
    (root / "different-extensions" / "data.csv").write_text("a,b\n1,2\n")
    (root / "different-extensions" / "data.txt").write_text("not csv\n")
    (root / "pdf-sample_0.pdf").write_bytes(b"%PDF-1.4\n% a stand-in\n%%EOF\n")
    (root / "image-datasets").mkdir()
    os.symlink(simple_images, root / "image-datasets" / "simple")
    partitioned = root / "image-datasets" / "dir-partitioned"
    for label in ("cat", "dog"):
        (partitioned / label).mkdir(parents=True)
        for image in sorted(os.listdir(simple_images))[:2]:
            os.symlink(os.path.join(simple_images, image), partitioned / label / image)
    os.symlink(os.path.dirname(batoidea), root / "batoidea")
    return str(root)


RUN = sorted(set(DOCSTRINGS) - set(SKIPPED))


@pytest.mark.parametrize("name", RUN)
def test_the_example_gives_on_ember_what_it_gives_on_ray(name, ordered_ray, example_data, tmp_path):
    test = DOCSTRINGS[name]
    (tmp_path / "ray" / "tmp").mkdir(parents=True)
    (tmp_path / "ember" / "tmp").mkdir(parents=True)
    scratch = {side: str(tmp_path / side / "tmp") for side in ("ray", "ember")}
    theirs = run_docstring(test, lambda s: with_local_data(s, example_data, scratch["ray"]), tmp_path / "ray")
    ours = run_docstring(
        test, lambda s: to_ember(with_local_data(s, example_data, scratch["ember"])), tmp_path / "ember"
    )
    for example, (their_out, their_error), (our_out, our_error) in zip(
        test.examples, theirs, ours, strict=True
    ):
        where = f"{name}, example at line {example.lineno}: {example.source.strip()}"
        their_out, our_out = (
            their_out.replace(scratch["ray"], "<tmp>"),
            our_out.replace(scratch["ember"], "<tmp>"),
        )
        assert our_error == their_error, (
            f"{where}: Ray raised {their_error or 'nothing'}, ember {our_error or 'nothing'}"
        )
        assert our_out == their_out, f"{where}\n--- Ray:\n{their_out}--- ember:\n{our_out}"


def test_every_docstring_is_run_or_skipped_for_a_reason():
    assert set(SKIPPED) <= set(DOCSTRINGS), sorted(set(SKIPPED) - set(DOCSTRINGS))
    assert all(reason.strip() for reason in SKIPPED.values())
    assert len(DOCSTRINGS) > 100  # the extraction found Ray's examples
