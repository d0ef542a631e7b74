"""DataIterator: what ``Dataset.iterator()``, ``Dataset.streaming_split()`` and
``ember.train.get_dataset_shard()`` hand to a consumer (Ray Data's ``DataIterator``).

It reads one Dataset (a whole dataset, or one shard of a ``streaming_split``); every iteration
method runs that dataset's plan afresh, so each ``for`` loop over ``iter_batches()`` is one epoch.
The batch iterables it returns are ember's ``BatchIterable``: ``state_dict()`` /
``load_state_dict()`` resume a shard exactly where it stopped.

Unlike Ray, the shards of a ``streaming_split`` do not pull from one shared execution: each shard
runs the plan for its own contiguous range of rows (``plan.Shard``), so shards need no barrier and
may be consumed one after another, in one process or many.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, overload

from ember.data.context import DataContext
from ember.data.iterate import BatchIterable
from ember.data.ray_args import ray_compatible

if TYPE_CHECKING:
    import numpy as np
    import torch

    from ember.data.block import DataBatch
    from ember.data.dataset import CollatedData, Dataset, MaterializedDataset, TorchDeviceType
    from ember.data.schema import Schema


class DataIterator:
    """An iterator over the rows of a Dataset, for one consumer (a training worker, a shard).

    Example:
        >>> import ember.data
        >>> first, second = ember.data.range(6).streaming_split(2, equal=True)
        >>> [b["id"].tolist() for b in second.iter_batches(batch_size=2)]
        [[3, 4], [5]]
        >>> list(first.iter_rows())
        [{'id': 0}, {'id': 1}, {'id': 2}]
    """

    def __init__(self, dataset: Dataset) -> None:
        self._dataset = dataset

    @ray_compatible
    def iter_batches(
        self,
        *,
        prefetch_batches: int = 1,
        batch_size: int | None = 256,
        batch_format: str | None = "default",
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        **_: Any,
    ) -> BatchIterable[DataBatch]:
        """Batches (dict of numpy arrays by default), as ``Dataset.iter_batches``; one epoch per ``iter()``.

        Example:
            >>> it = ember.data.range(5).iterator()
            >>> [b["id"].tolist() for b in it.iter_batches(batch_size=2, drop_last=True)]
            [[0, 1], [2, 3]]
        """
        return self._dataset.iter_batches(
            prefetch_batches=prefetch_batches,
            batch_size=batch_size,
            batch_format=batch_format,
            drop_last=drop_last,
            local_shuffle_buffer_size=local_shuffle_buffer_size,
            local_shuffle_seed=local_shuffle_seed,
        )

    @overload
    def iter_torch_batches(
        self,
        *,
        prefetch_batches: int = ...,
        batch_size: int | None = ...,
        dtypes: torch.dtype | dict[str, torch.dtype] | None = ...,
        device: TorchDeviceType | Literal["auto"] | None = ...,
        collate_fn: None = ...,
        drop_last: bool = ...,
        local_shuffle_buffer_size: int | None = ...,
        local_shuffle_seed: int | None = ...,
        pin_memory: bool = ...,
        **_: Any,
    ) -> BatchIterable[dict[str, torch.Tensor]]: ...
    @overload
    def iter_torch_batches(
        self,
        *,
        prefetch_batches: int = ...,
        batch_size: int | None = ...,
        dtypes: torch.dtype | dict[str, torch.dtype] | None = ...,
        device: TorchDeviceType | Literal["auto"] | None = ...,
        collate_fn: Callable[[dict[str, np.ndarray]], CollatedData],
        drop_last: bool = ...,
        local_shuffle_buffer_size: int | None = ...,
        local_shuffle_seed: int | None = ...,
        pin_memory: bool = ...,
        **_: Any,
    ) -> BatchIterable[CollatedData]: ...
    @ray_compatible
    def iter_torch_batches(
        self,
        *,
        prefetch_batches: int = 1,
        batch_size: int | None = 256,
        dtypes: torch.dtype | dict[str, torch.dtype] | None = None,
        device: TorchDeviceType | Literal["auto"] | None = "auto",
        collate_fn: Callable[[dict[str, np.ndarray]], Any] | None = None,
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        pin_memory: bool = False,
        **_: Any,
    ) -> BatchIterable[Any]:
        """Batches as dicts of torch tensors, as ``Dataset.iter_torch_batches`` (exact resume with
        ``state_dict()``).

        Example:
            >>> it = ember.data.range(4).iterator()
            >>> next(iter(it.iter_torch_batches(batch_size=4, device=None)))["id"]
            tensor([0, 1, 2, 3])
        """
        options: dict[str, Any] = {  # as one mapping: the call fits either of the method's overloads
            "prefetch_batches": prefetch_batches,
            "batch_size": batch_size,
            "dtypes": dtypes,
            "device": device,
            "collate_fn": collate_fn,
            "drop_last": drop_last,
            "local_shuffle_buffer_size": local_shuffle_buffer_size,
            "local_shuffle_seed": local_shuffle_seed,
            "pin_memory": pin_memory,
        }
        return self._dataset.iter_torch_batches(**options)

    def iter_rows(self) -> Iterable[dict[str, Any]]:
        """Rows as dicts; a re-iterable (each ``for`` loop reads the data again).

        Example:
            >>> rows = ember.data.range(2).iterator().iter_rows()
            >>> list(rows), list(rows)
            ([{'id': 0}, {'id': 1}], [{'id': 0}, {'id': 1}])
        """
        return _Rows(self._dataset)

    @ray_compatible
    def to_torch(
        self,
        *,
        label_column: str | None = None,
        feature_columns: list[str] | list[list[str]] | dict[str, list[str]] | None = None,
        label_column_dtype: torch.dtype | None = None,
        feature_column_dtypes: torch.dtype | list[torch.dtype] | dict[str, torch.dtype] | None = None,
        batch_size: int = 1,
        prefetch_batches: int = 1,
        drop_last: bool = False,
        local_shuffle_buffer_size: int | None = None,
        local_shuffle_seed: int | None = None,
        unsqueeze_label_tensor: bool = True,
        unsqueeze_feature_tensors: bool = True,
        **_: Any,
    ) -> torch.utils.data.IterableDataset[Any]:
        """A ``torch.utils.data.IterableDataset`` of ``(features, label)`` tuples, Ray's layout exactly
        (deprecated in Ray 2.60 in favour of ``iter_torch_batches``, still there; it warns as Ray's): label
        (N, 1), or (N,)
        with ``unsqueeze_label_tensor=False``, None without ``label_column``; features one (N, n)
        tensor, or a list / dict of them for a list of lists / dict of ``feature_columns``; dtypes
        cast as given (``ember/data/torch_features.py``). It forwards ``state_dict``/``load_state_dict``.

        Example:
            >>> ds = ember.data.from_items([{"x": 1.0, "y": 0}, {"x": 2.0, "y": 1}])
            >>> features, label = next(iter(ds.iterator().to_torch(label_column="y", batch_size=2)))
            >>> features.shape, label.tolist()
            (torch.Size([2, 1]), [[0], [1]])
        """
        import warnings

        from ember.data.torch_features import FeatureLabelDataset

        warnings.warn(
            "`DataIterator.to_torch` is deprecated and will be removed after October 2026. Use "
            "`DataIterator.iter_torch_batches` instead.",
            DeprecationWarning,
            stacklevel=3,
        )  # as Ray 2.60
        batches = self.iter_batches(
            batch_size=batch_size,
            prefetch_batches=prefetch_batches,
            batch_format="numpy",
            drop_last=drop_last,
            local_shuffle_buffer_size=local_shuffle_buffer_size,
            local_shuffle_seed=local_shuffle_seed,
        )
        return FeatureLabelDataset(
            batches,
            label_column,
            feature_columns,
            label_column_dtype,
            feature_column_dtypes,
            unsqueeze_label_tensor,
            unsqueeze_feature_tensors,
        )

    def materialize(self) -> MaterializedDataset:
        """Run the plan once and keep this iterator's rows in memory, as a Dataset.

        Example:
            >>> _, second = ember.data.range(5).streaming_split(2)
            >>> second.materialize().take_all()
            [{'id': 2}, {'id': 3}, {'id': 4}]
        """
        return self._dataset.materialize()

    def schema(self) -> Schema | None:
        """Column names and types of the rows it yields.

        Example:
            >>> ember.data.range(3).iterator().schema().names
            ['id']
        """
        return self._dataset.schema()

    def stats(self) -> str:
        """What the last pass over this iterator's data did, operator by operator (``Dataset.stats``).

        Example:
            >>> it = ember.data.range(3).iterator(); _ = list(it.iter_batches())
            >>> "Range" in it.stats()
            True
        """
        return self._dataset.stats()

    def get_context(self) -> DataContext:
        """The DataContext its data runs under: its dataset's ``Dataset.context``.

        Example:
            >>> ds = ember.data.range(1)
            >>> ds.iterator().get_context() is ds.context
            True
        """
        return self._dataset.context

    def _shard_dataset(self) -> Dataset:
        """The Dataset it reads (for ember's own integrations, e.g. re-sharding for DDP ranks)."""
        return self._dataset

    def __repr__(self) -> str:
        return f"DataIterator({self._dataset!r})"


#: Ray's older name, still exported by Ray Data 2.60.
DatasetIterator = DataIterator


class _Rows:
    """A re-iterable over the rows of a Dataset (Ray's ``iter_rows`` returns an Iterable)."""

    def __init__(self, dataset: Dataset) -> None:
        self._dataset = dataset

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._dataset.iter_rows()
