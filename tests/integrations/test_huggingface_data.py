"""ember.data.from_huggingface: Hugging Face datasets built from local files, never the Hub."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

datasets = pytest.importorskip(
    "datasets", reason="needs the huggingface extra: pip install 'ember[huggingface]'"
)

import ember.data  # noqa: E402
from ember.data import DataContext  # noqa: E402
from ember.errors import DataError  # noqa: E402

FEATURES = datasets.Features(
    {
        "id": datasets.Value("int64"),
        "score": datasets.Value("float32"),
        "text": datasets.Value("string"),
        "label": datasets.ClassLabel(names=["cat", "dog", "bird"]),
        "pixels": datasets.Sequence(datasets.Value("uint8")),
    }
)


@pytest.fixture
def local_dataset(tmp_path) -> datasets.Dataset:
    """A dataset loaded from a local parquet file: memory-mapped Arrow cache, as load_dataset makes it."""
    rng = np.random.default_rng(0)
    n = 250
    table = pa.table(
        {
            "id": pa.array(np.arange(n), pa.int64()),
            "score": pa.array(rng.random(n, dtype=np.float32)),
            "text": pa.array([f"row {i}" for i in range(n)]),
            "label": pa.array(rng.integers(0, 3, n), pa.int64()),
            "pixels": pa.array(
                [rng.integers(0, 256, i % 5).astype(np.uint8).tolist() for i in range(n)],
                pa.list_(pa.uint8()),
            ),
        }
    )
    pq.write_table(table, tmp_path / "data.parquet")
    return datasets.load_dataset(
        "parquet",
        data_files=str(tmp_path / "data.parquet"),
        split="train",
        features=FEATURES,
        cache_dir=str(tmp_path / "cache"),
    )


@pytest.fixture
def small_blocks():
    context = DataContext.get_current()
    before = context.target_rows_per_block
    context.target_rows_per_block = 64
    yield 64
    context.target_rows_per_block = before


def _table(ds: ember.data.Dataset) -> pa.Table:
    return pa.concat_tables(list(ds.iter_batches(batch_size=None, batch_format="pyarrow")))


def test_columns_types_and_rows_are_preserved(local_dataset, small_blocks):
    ds = ember.data.from_huggingface(local_dataset)
    hf_table = local_dataset.data.table
    got = _table(ds)
    assert got.schema.equals(hf_table.schema)  # uint8 lists stay uint8, ClassLabel stays its int64 codes
    assert got.equals(hf_table.combine_chunks().cast(hf_table.schema))
    assert ds.count() == 250 and ds.take(1)[0]["text"] == "row 0"
    assert ds.columns() == ["id", "score", "text", "label", "pixels"]


def test_blocks_are_zero_copy_slices_of_the_dataset_table(local_dataset, small_blocks):
    hf_column = local_dataset.data.table.column("score").chunk(0)
    start, size = hf_column.buffers()[1].address, hf_column.buffers()[1].size
    blocks = list(
        ember.data.from_huggingface(local_dataset).iter_batches(batch_size=None, batch_format="pyarrow")
    )
    assert [b.num_rows for b in blocks] == [64, 64, 64, 58]
    for block in blocks:
        data = block.column("score").chunk(0).buffers()[1]
        assert start <= data.address < start + size  # inside the dataset's own (memory-mapped) buffer


def test_an_indices_mapping_is_applied(local_dataset):
    picked = local_dataset.shuffle(seed=3).select(range(10))
    ds = ember.data.from_huggingface(picked)
    assert [r["id"] for r in ds.take_all()] == picked["id"]
    assert ember.data.from_huggingface(local_dataset.filter(lambda r: r["label"] == 1)).count() == sum(
        1 for v in local_dataset["label"] if v == 1
    )


def test_override_num_blocks(local_dataset):
    blocks = list(
        ember.data.from_huggingface(local_dataset, override_num_blocks=5).iter_batches(
            batch_size=None, batch_format="pyarrow"
        )
    )
    assert [b.num_rows for b in blocks] == [50] * 5


def test_an_iterable_dataset_is_streamed(tmp_path, small_blocks):
    produced = tmp_path / "produced.txt"

    def rows():
        for i in range(3000):
            with produced.open("a") as f:
                f.write(".")
            yield {"id": i, "text": f"line {i}"}

    hf = datasets.IterableDataset.from_generator(rows)
    ds = ember.data.from_huggingface(hf)
    assert not produced.exists()  # building the Dataset reads nothing
    assert [r["id"] for r in ds.take(3)] == [0, 1, 2]
    assert len(produced.read_text()) < 1000  # a few blocks of 64, not the whole stream
    produced.unlink()
    assert ds.count() == 3000


def test_an_iterable_dataset_from_local_files_keeps_types(local_dataset, tmp_path):
    hf = local_dataset.to_iterable_dataset(num_shards=2)
    got = _table(ember.data.from_huggingface(hf))
    assert got.schema.field("pixels").type == pa.list_(pa.uint8())
    assert got.column("id").to_pylist() == list(range(250))


def test_a_dataset_dict_is_refused_naming_its_splits(local_dataset):
    both = datasets.DatasetDict({"train": local_dataset, "test": local_dataset})
    with pytest.raises(
        DataError,
        match=r"DatasetDict with splits \['train', 'test'\]; pass one split, e\.g\. "
        r"from_huggingface\(dataset\['train'\]\)",
    ):
        ember.data.from_huggingface(both)


def test_something_else_is_refused():
    with pytest.raises(DataError, match="needs a datasets.Dataset or datasets.IterableDataset; got dict"):
        ember.data.from_huggingface({"a": [1]})
