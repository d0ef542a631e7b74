"""from_huggingface: a Hugging Face `datasets.Dataset` or `IterableDataset` as an ember Dataset.

A `datasets.Dataset` is an Arrow table already: its blocks are zero-copy slices of that table (the
memory-mapped cache file stays the storage) unless an indices mapping (after `select`, `shuffle`,
`filter`, `train_test_split`) must be applied first, which copies the selected rows once, as Ray does.
An `IterableDataset` is streamed: nothing is read until the ember Dataset executes, then Arrow
batches are pulled from it as the consumer asks for them.

Unlike Ray, ember never redirects to the Hub's parquet export of a dataset: it reads the object
you pass, so a dataset built from local files never touches the network.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ember.data.context import DataContext
from ember.data.dataset import Dataset
from ember.data.plan import Read
from ember.data.read.memory import block_tasks
from ember.data.read.task import ReadTask, Source
from ember.errors import DataError

if TYPE_CHECKING:
    import datasets


def from_huggingface(
    dataset: datasets.Dataset | datasets.IterableDataset,
    parallelism: int = -1,
    concurrency: int | None = None,
    override_num_blocks: int | None = None,
) -> Dataset:
    """An ember Dataset with the rows, columns and Arrow types of a Hugging Face dataset (Ray's signature).

    `concurrency` only schedules work in Ray and is accepted and ignored; `parallelism` is Ray's
    deprecated name for `override_num_blocks`.

    Example:
        >>> import datasets, ember.data
        >>> hf = datasets.Dataset.from_dict({"text": ["a", "b", "c"], "label": [0, 1, 0]})
        >>> ds = ember.data.from_huggingface(hf)
        >>> ds.take(2)
        [{'text': 'a', 'label': 0}, {'text': 'b', 'label': 1}]
        >>> streamed = ember.data.from_huggingface(hf.to_iterable_dataset())
        >>> streamed.count()
        3
    """
    hf = _datasets_module(dataset)
    if parallelism != -1:
        warnings.warn(
            "from_huggingface(parallelism=...) is deprecated (as in Ray); use override_num_blocks",
            DeprecationWarning,
            stacklevel=2,
        )
        override_num_blocks = override_num_blocks or parallelism
    if isinstance(dataset, (hf.DatasetDict, hf.IterableDatasetDict)):
        splits = list(dataset.keys())
        raise DataError(
            f"from_huggingface got a {type(dataset).__name__} with splits {splits}; pass one split, "
            f"e.g. from_huggingface(dataset[{splits[0]!r}])"
            if splits
            else f"from_huggingface got an empty {type(dataset).__name__}; pass one split"
        )
    if isinstance(dataset, hf.IterableDataset):
        rows = _rows_per_block(None, override_num_blocks)
        return Dataset(Read(Source("FromHuggingFace", lambda: [_stream_task(dataset, rows)])))
    if isinstance(dataset, hf.Dataset):
        table = arrow_table(dataset)
        rows = _rows_per_block(table.num_rows, override_num_blocks)
        return Dataset(
            Read(Source("FromHuggingFace", lambda: block_tasks(_slices(table, rows), "from_huggingface")))
        )
    raise DataError(
        f"from_huggingface needs a datasets.Dataset or datasets.IterableDataset; got {type(dataset).__name__}"
    )


def _datasets_module(dataset: Any) -> Any:
    try:
        import datasets
    except ImportError:
        raise DataError(
            f"from_huggingface got a {type(dataset).__name__} but the datasets package is not installed; "
            "pip install 'ember[huggingface]'"
        ) from None
    return datasets


def arrow_table(dataset: datasets.Dataset) -> pa.Table:
    """The dataset's rows as one pyarrow Table: the backing table itself (zero-copy) when no indices
    mapping is pending, otherwise the selected rows gathered into a new table."""
    return dataset.with_format("arrow")[:]


def _rows_per_block(num_rows: int | None, num_blocks: int | None) -> int:
    if num_blocks and num_rows is not None:
        return max(1, -(-num_rows // num_blocks))
    return DataContext.get_current().target_rows_per_block


def _slices(table: pa.Table, rows: int) -> list[pa.Table]:
    """Zero-copy slices of `rows` rows (one empty slice for an empty table, so the schema survives)."""
    return [table.slice(start, rows) for start in range(0, table.num_rows, rows)] or [table]


def _stream_task(dataset: datasets.IterableDataset, rows: int) -> ReadTask:
    return ReadTask(read=_stream_reader(dataset, rows), description="from_huggingface stream")


def _stream_reader(dataset: datasets.IterableDataset, rows: int) -> Callable[[], Iterator[pa.Table]]:
    def read() -> Iterator[pa.Table]:
        for batch in dataset.with_format("arrow").iter(batch_size=rows):
            yield batch if isinstance(batch, pa.Table) else pa.table(batch)

    return read
