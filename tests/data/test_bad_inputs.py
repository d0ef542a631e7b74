"""Every bad input to ember.data gets one line naming the problem and the fix, never a silent wrong result.

Tests marked "silent" returned a wrong result on the old code (noted per test); the others raised a raw
error from numpy/pyarrow/int() or hung.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import time
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import torch
from _privileges import in_a_child_without_root

import ember.data
import ember.data.manifest  # noqa: F401 - imported before dropping privileges in a forked child
from ember.errors import ConfigError, DataError, WorkerError
from tests._procs import child_pids


@pytest.fixture
def processes():
    ctx = ember.data.DataContext.get_current()
    before, ctx.execution = ctx.execution, "processes"
    yield
    ctx.execution = before


# ----------------------------------------------------------------- silent wrong results before


def test_union_of_mismatched_schemas_is_refused_naming_the_column_and_types():
    # old: [{'a': 1}, {'a': 'x'}] rows, batched into NaN-filled / mixed columns
    ints, strings = ember.data.from_items([{"a": 1}]), ember.data.from_items([{"a": "x"}])
    with pytest.raises(
        DataError,
        match=r"^union: column 'a' is int64 in the first dataset but string in dataset 1; "
        r"make the datasets' columns agree",
    ):
        ints.union(strings).take_all()
    with pytest.raises(DataError, match=r"^union: dataset 1 has columns \['b'\] but the first has \['a'\]"):
        list(ints.union(ember.data.from_items([{"b": 2.0}])).iter_batches())
    assert ints.union(ember.data.from_items([{"a": 5}])).take_all() == [{"a": 1}, {"a": 5}]


def test_limit_below_zero_is_refused():
    # old: limit(-1).count() returned -1
    for bad in (-1, 2.5, "3"):
        with pytest.raises(ConfigError, match=r"^Dataset\.limit\(limit=.*\); use an integer >= 0$"):
            ember.data.range(5).limit(bad)
    assert ember.data.range(5).limit(0).count() == 0


def test_parquet_files_with_conflicting_schemas_are_refused_naming_both_files_and_the_column(tmp_path):
    # old: one read returned rows of both files, ints and strings mixed (or null-filled columns)
    pq.write_table(pa.table({"x": [1, 2], "y": [0.5, 1.5]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": ["1", "2"], "y": [0.5, 1.5]}), tmp_path / "b.parquet")
    with pytest.raises(
        DataError,
        match=r"^read_parquet: column 'x' is int64 in .*a\.parquet but string in "
        r".*b\.parquet; read the files separately",
    ):
        ember.data.read_parquet(tmp_path).take_all()
    pq.write_table(pa.table({"y": [2.5]}), tmp_path / "b.parquet")
    with pytest.raises(DataError, match=r"column 'x' is int64 in .*a\.parquet but missing in .*b\.parquet"):
        ember.data.read_parquet(tmp_path).count()
    assert ember.data.read_parquet(tmp_path, columns=["y"]).take_all() == [{"y": 0.5}, {"y": 1.5}, {"y": 2.5}]


def test_a_latin1_csv_is_refused_naming_the_file_and_the_encoding_fix(tmp_path):
    # old: the column silently became bytes (b'caf\xe9')
    path = tmp_path / "people.csv"
    path.write_bytes("name,age\ncafé,1\nRenée,2\n".encode("latin-1"))
    with pytest.raises(
        DataError,
        match=r"read_csv: column 'name' of .*people\.csv is not valid utf8 text; pass its "
        r"encoding, e\.g\. read_options=pyarrow\.csv\.ReadOptions\(encoding='latin-1'\)",
    ):
        ember.data.read_csv(path).take_all()
    fixed = ember.data.read_csv(path, read_options=pacsv.ReadOptions(encoding="latin-1"))
    assert fixed.take_all() == [{"name": "café", "age": 1}, {"name": "Renée", "age": 2}]
    as_bytes = ember.data.read_csv(
        path, convert_options=pacsv.ConvertOptions(column_types={"name": pa.binary()})
    )
    assert as_bytes.take(1) == [{"name": b"caf\xe9", "age": 1}]


def test_a_typo_in_a_dtypes_key_names_the_columns():
    # old: the key was ignored and "x" stayed float64
    ds = ember.data.from_items([{"x": 1.0, "label": 1}])
    with pytest.raises(
        ConfigError,
        match=r"^iter_torch_batches\(dtypes=\.\.\.\): no column 'xx' \(the batches have "
        r"columns \['x', 'label'\]\); did you mean 'x'\?$",
    ):
        list(ds.iter_torch_batches(dtypes={"xx": torch.float32}))
    (batch,) = ds.iter_torch_batches(dtypes={"x": torch.float32})
    assert batch["x"].dtype == torch.float32


def test_pin_memory_is_honoured_not_ignored():
    ds = ember.data.range(8)
    if torch.cuda.is_available():
        batches = list(ds.iter_torch_batches(batch_size=4, pin_memory=True, device=None))
        assert all(b["id"].is_pinned() for b in batches)
        collated = list(
            ds.iter_torch_batches(
                batch_size=4,
                pin_memory=True,
                device=None,
                collate_fn=lambda b: torch.as_tensor(b["id"].copy()),
            )
        )
        assert all(t.is_pinned() for t in collated)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(ds.iter_torch_batches(batch_size=2, pin_memory=True))
    pin_warnings = [w for w in caught if "pin_memory=True" in str(w.message)]
    assert len(pin_warnings) == 1  # once per call, not per batch
    assert "no CUDA device is available, so batches are not pinned" in str(pin_warnings[0].message)
    assert torch.equal(torch.cat([b["id"] for b in batches]), torch.arange(8))


# ----------------------------------------------------------------- hangs and raw errors before


@pytest.mark.parametrize("bad", [0, -3, 2.5, True, "big"])
def test_map_batches_refuses_a_bad_batch_size_at_the_call(bad):
    # old: batch_size=0 never returned (memory grew until OOM); -3 and 2.5 failed inside pyarrow in a worker
    start = time.monotonic()
    with pytest.raises(
        ConfigError,
        match=r"^Dataset\.map_batches\(batch_size=.*\); use a positive integer, None "
        r"\(or 'default'\) for whole blocks, or 'auto' for ~16 MiB batches$",
    ):
        ember.data.range(10).map_batches(lambda b: b, batch_size=bad)
    assert time.monotonic() - start < 1


def test_batch_size_none_and_default_keep_their_ray_meaning():
    blocks = ember.data.range(3000, override_num_blocks=2).map_batches(
        lambda b: {"n": [len(b["id"])]}, batch_size=None
    )
    assert [r["n"] for r in blocks.take_all()] == [1500, 1500]
    # Ray 2.60's map_batches: "Default batch_size is None" (whole blocks; 1024 was an older Ray's default)
    default = ember.data.range(3000, override_num_blocks=1).map_batches(lambda b: {"n": [len(b["id"])]})
    assert [r["n"] for r in default.take_all()] == [3000]


@pytest.mark.parametrize(
    "call",
    [
        lambda ds: ds.iter_batches(batch_size=2.5),
        lambda ds: ds.iter_torch_batches(batch_size=-3),
        lambda ds: ds.iter_batches(batch_size=0),
    ],
)
def test_iterators_refuse_a_bad_batch_size(call):
    with pytest.raises(
        ConfigError, match=r"^Dataset\.iter_(torch_)?batches\(batch_size=.*\); use a positive integer"
    ):
        call(ember.data.range(4))


def test_a_seed_that_is_not_an_integer_is_one_line():
    with pytest.raises(
        ConfigError, match=r"^Dataset\.random_shuffle\(seed='x'\); use an integer seed, or None"
    ):
        ember.data.range(4).random_shuffle(seed="x")
    with pytest.raises(ConfigError, match=r"^Dataset\.randomize_block_order\(seed=1\.5\)"):
        ember.data.range(4).randomize_block_order(seed=1.5)
    with pytest.raises(ConfigError, match=r"^Dataset\.iter_batches\(local_shuffle_seed='x'\)"):
        ember.data.range(4).iter_batches(local_shuffle_buffer_size=2, local_shuffle_seed="x")
    assert sorted(r["id"] for r in ember.data.range(4).random_shuffle(seed=np.int64(3)).take_all()) == [
        0,
        1,
        2,
        3,
    ]


def test_a_zero_byte_npy_names_the_file(tmp_path):
    (tmp_path / "empty.npy").write_bytes(b"")
    with pytest.raises(DataError, match=r"read_numpy: .*empty\.npy is empty \(0 bytes\), not a \.npy file"):
        ember.data.read_numpy(tmp_path / "empty.npy").take_all()
    (tmp_path / "empty.npy").write_bytes(b"\x93NUMPY")
    with pytest.raises(DataError, match=r"read_numpy: .*empty\.npy is not a readable \.npy file"):
        ember.data.read_numpy(tmp_path / "empty.npy").take_all()


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("shuffle", r"use local_shuffle_buffer_size=<rows> \(with local_shuffle_seed=\)"),
        ("num_workers", r"use prefetch_batches=<n> to prepare batches ahead"),
    ],
)
def test_dataloader_arguments_name_the_ember_argument(name, hint):
    with pytest.raises(
        ConfigError,
        match=rf"^Dataset\.iter_torch_batches\(\) has no argument '{name}' \(a DataLoader "
        rf"argument\); {hint}",
    ):
        ember.data.range(4).iter_torch_batches(**{name: 2})


def test_unreadable_files_and_folders_say_permission_denied():
    root = tempfile.mkdtemp(
        dir="/tmp"
    )  # pytest's tmp_path is private to root: the child could not even enter it
    try:
        os.chmod(root, 0o755)
        locked = os.path.join(root, "locked")
        os.mkdir(locked)
        pq.write_table(pa.table({"x": [1]}), os.path.join(locked, "a.parquet"))
        secret = os.path.join(root, "secret.parquet")
        pq.write_table(pa.table({"x": [1]}), secret)
        os.chmod(secret, 0)
        os.chmod(locked, 0)
        assert in_a_child_without_root(lambda: ember.data.read_parquet(locked)) == (
            f"DataError: read_parquet: permission denied reading {locked!r}; fix its permissions (chmod) or "
            "run as its owner"
        )
        inside = os.path.join(locked, "a.parquet")
        assert in_a_child_without_root(lambda: ember.data.read_parquet(inside)).startswith(
            f"DataError: read_parquet: permission denied reading {inside!r}"
        )
        assert in_a_child_without_root(lambda: ember.data.read_parquet(secret)).startswith(
            f"DataError: read_parquet: permission denied reading {secret!r}"
        )
        assert in_a_child_without_root(lambda: ember.data.read_parquet(root + "/nothing")).startswith(
            "DataFileNotFoundError: read_parquet: no such file or folder"
        )  # also a FileNotFoundError (Ray)
    finally:
        os.chmod(os.path.join(root, "locked"), stat.S_IRWXU)
        shutil.rmtree(root)


def test_exhausted_retries_say_how_many_were_used(processes):
    class Crash:
        def __call__(self, batch):
            os.kill(os.getpid(), 9)

    with pytest.raises(
        WorkerError, match=r"it failed 3 times \(max_task_retries=2: all 2 retries used\); check for"
    ):
        ember.data.range(4).map_batches(Crash, concurrency=1, batch_size=2, max_task_retries=2).take_all()
    assert child_pids() == set()


def test_max_task_retries_is_honoured_for_a_function_udf(processes, tmp_path):
    # old: the option was dropped for functions, and the error then said to pass it
    marker = tmp_path / "died-once"

    def die_once(batch):
        if batch["id"][0] == 4 and not marker.exists():
            marker.write_text("x")
            os.kill(os.getpid(), 9)
        return batch

    ds = ember.data.range(8, override_num_blocks=4).map_batches(die_once, batch_size=2, max_task_retries=1)
    assert [r["id"] for r in ds.take_all()] == list(range(8))
    assert marker.exists()


# ------------------------------------------------------------- values other tools write, and what UDFs return


def test_a_plain_fixed_size_list_column_is_a_tensor_column():
    # old: "ndarrays of different shapes" for what other tools write for images
    pixels = (np.arange(3 * 784) % 251).astype(np.uint8)
    images = pa.FixedSizeListArray.from_arrays(pa.array(pixels), 784)
    ds = ember.data.from_arrow(pa.table({"image": images, "label": [0, 1, 2]}))
    (batch,) = ds.iter_torch_batches(batch_size=3)
    assert batch["image"].shape == (3, 784) and batch["image"].dtype == torch.uint8
    assert torch.equal(batch["image"], torch.from_numpy(pixels.reshape(3, 784)))
    nested = pa.FixedSizeListArray.from_arrays(pa.FixedSizeListArray.from_arrays(pa.array(pixels), 28), 28)
    assert ember.data.from_arrow(pa.table({"image": nested})).take_batch()["image"].shape == (3, 28, 28)


def test_variable_size_images_arrive_writable_in_map_batches():
    # old: ValueError: assignment destination is read-only (docs promise writable copies)
    images = [np.zeros((2, 3), np.uint8), np.zeros((3, 3), np.uint8)]

    def brighten(batch):
        for image in batch["image"]:
            image += 7
        return batch

    rows = (
        ember.data.from_items([{"image": i} for i in images]).map_batches(brighten, batch_size=2).take_all()
    )
    assert [r["image"].tolist() for r in rows] == [np.full((2, 3), 7).tolist(), np.full((3, 3), 7).tolist()]


def test_a_map_returning_a_one_element_bool_array_keeps_it():
    # old: pyarrow.ArrowTypeError: bool is not valid data type for a tensor
    rows = ember.data.range(3).map(lambda r: {"flag": np.array([r["id"] % 2 == 0])}).take_all()
    assert [(r["flag"].dtype, r["flag"].tolist()) for r in rows] == [
        (np.bool_, [True]),
        (np.bool_, [False]),
        (np.bool_, [True]),
    ]


def test_csv_files_with_conflicting_types_are_refused_naming_both_files_and_the_column(tmp_path):
    # old: ints of a.csv and strings of b.csv in one column (or ints promoted to floats)
    (tmp_path / "a.csv").write_text("x,y\n1,2\n")
    (tmp_path / "b.csv").write_text("x,y\nten,3\n")
    with pytest.raises(
        DataError,
        match=r"read_csv: column 'x' is int64 in .*a\.csv but string in .*b\.csv; read "
        r"the files separately, or pass convert_options=",
    ):
        ember.data.read_csv(tmp_path).take_all()
    (tmp_path / "b.csv").write_text("y,x\n3,\n")  # another column order and an empty column agree
    assert ember.data.read_csv(tmp_path).take_all() == [{"x": 1, "y": 2}, {"x": None, "y": 3}]
    typed = pacsv.ConvertOptions(column_types={"x": pa.string()})
    (tmp_path / "b.csv").write_text("x,y\nten,3\n")
    assert ember.data.read_csv(tmp_path, convert_options=typed).take_all() == [
        {"x": "1", "y": 2},
        {"x": "ten", "y": 3},
    ]
