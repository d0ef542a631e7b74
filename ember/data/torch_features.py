"""``DataIterator.to_torch`` (Ray Data 2.60, deprecated there for ``iter_torch_batches``, still public):
an IterableDataset of ``(features, label)`` tuples, exactly Ray's shapes and dtypes.

Per batch of N rows: each selected column becomes a tensor (``torch.as_tensor``, cast to the given
dtype), unsqueezed to (N, 1) unless told not to, and a group of columns is concatenated along dim 1.
``feature_columns``: None (every column but the label) or a list -> one tensor; a list of lists ->
a list of tensors; a dict of lists -> a dict of tensors. ``feature_column_dtypes`` is one dtype, or
matches that structure. ``label`` is None without ``label_column``. ``state_dict`` /
``load_state_dict`` are the batch iterator's, so a resumed epoch continues exactly.

Example:
    >>> ds = ember.data.from_items([{"a": 1, "b": 2.0, "y": 0}, {"a": 3, "b": 4.0, "y": 1}])
    >>> features, label = next(iter(ds.iterator().to_torch(label_column="y", batch_size=2)))
    >>> features.tolist(), label.tolist()
    ([[1.0, 2.0], [3.0, 4.0]], [[0], [1]])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from ember.data.iterate import BatchIterable, stacked_lists
from ember.errors import ConfigError, DataError


def check_feature_dtypes(feature_columns: Any, feature_column_dtypes: Any) -> None:
    """Ray's checks of ``feature_column_dtypes`` against ``feature_columns`` (one line each).

    Example:
        >>> check_feature_dtypes({"x": ["a"]}, {"z": torch.float32})
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: to_torch: `feature_columns` and `feature_column_dtypes` must have the same
        keys.
    """
    if not feature_column_dtypes or isinstance(feature_column_dtypes, torch.dtype):
        return
    if isinstance(feature_columns, dict):
        if not isinstance(feature_column_dtypes, dict):
            raise ConfigError(
                "to_torch: if `feature_columns` is a dict, `feature_column_dtypes` must be None, "
                f"a torch.dtype or a dict, got {type(feature_column_dtypes).__name__}."
            )
        if set(feature_columns) != set(feature_column_dtypes):
            raise ConfigError(
                "to_torch: `feature_columns` and `feature_column_dtypes` must have the same keys."
            )
        groups = list(feature_columns.values())
    elif feature_columns and isinstance(feature_columns[0], (list, tuple)):
        if not isinstance(feature_column_dtypes, (list, tuple)):
            raise ConfigError(
                "to_torch: if `feature_columns` is a list of lists, `feature_column_dtypes` must be "
                f"None, a torch.dtype or a sequence, got {type(feature_column_dtypes).__name__}."
            )
        if len(feature_columns) != len(feature_column_dtypes):
            raise ConfigError(
                "to_torch: `feature_columns` and `feature_column_dtypes` must have the same length."
            )
        groups = list(feature_columns)
    else:
        raise ConfigError(
            "to_torch: if `feature_columns` is a list of strings, `feature_column_dtypes` must be None "
            f"or a single torch.dtype, got {type(feature_column_dtypes).__name__}."
        )
    if any(not group for group in groups):
        raise ConfigError("to_torch: a column list in `feature_columns` may not be empty.")


def columns_tensor(
    batch: dict[str, np.ndarray], columns: list[str], dtype: Any, unsqueeze: bool
) -> torch.Tensor:
    """``columns`` of a numpy batch as one tensor: each (N, ...) column, unsqueezed to (N, 1, ...) if
    asked, concatenated along dim 1.

    Example:
        >>> batch = {"a": np.array([1, 2]), "b": np.array([3, 4])}
        >>> columns_tensor(batch, ["a", "b"], torch.float64, True).tolist()
        [[1.0, 3.0], [2.0, 4.0]]
        >>> columns_tensor(batch, ["a"], None, False).tolist()
        [1, 2]
    """
    tensors = []
    for name in columns:
        if name not in batch:
            raise DataError(f"to_torch: no column {name!r}; the batches have columns {list(batch)}")
        values = batch[name]
        stacked = stacked_lists(values)  # equal-length lists: one (N, length) array, as Ray stacks them
        values = values if stacked is None else stacked
        if values.dtype == object:
            raise DataError(
                f"to_torch: column {name!r} holds ragged or Python values and cannot become a tensor; "
                "use iter_torch_batches(collate_fn=...)"
            )
        tensor = torch.as_tensor(np.array(values, copy=True), dtype=dtype)  # Arrow memory is read-only
        tensors.append(tensor.unsqueeze(1) if unsqueeze else tensor)
    if len(tensors) > 1 and tensors[0].dim() < 2:
        raise DataError(
            f"to_torch: columns {columns} stay (N,) with unsqueeze_feature_tensors=False and cannot be "
            "concatenated; leave it True, or give one column per group (a list of lists or a dict)"
        )
    return torch.cat(tensors, dim=1) if len(tensors) > 1 else tensors[0]


class FeatureLabelDataset(torch.utils.data.IterableDataset):
    """``(features, label)`` per batch, Ray's ``to_torch`` layout (see the module docstring).

    Example:
        >>> ds = ember.data.from_items([{"a": 1, "b": 2, "y": 0}])
        >>> tds = ds.iterator().to_torch(label_column="y", feature_columns=[["a"], ["b"]],
        ...                              unsqueeze_label_tensor=False)
        >>> features, label = next(iter(tds))
        >>> [f.tolist() for f in features], label.tolist()
        ([[[1]], [[2]]], [0])
    """

    def __init__(
        self,
        batches: BatchIterable,
        label_column: str | None,
        feature_columns: Any,
        label_column_dtype: Any,
        feature_column_dtypes: Any,
        unsqueeze_label_tensor: bool,
        unsqueeze_feature_tensors: bool,
    ) -> None:
        self.batches = batches
        self.label_column, self.label_column_dtype = label_column, label_column_dtype
        self.feature_columns = feature_columns or None  # Ray: an empty collection is None
        self.feature_column_dtypes = feature_column_dtypes
        self.unsqueeze_label, self.unsqueeze_features = unsqueeze_label_tensor, unsqueeze_feature_tensors
        check_feature_dtypes(self.feature_columns, feature_column_dtypes)

    def __iter__(self) -> Iterator[tuple[Any, torch.Tensor | None]]:
        for batch in self.batches:
            label = None
            if self.label_column:
                label = columns_tensor(
                    batch, [self.label_column], self.label_column_dtype, self.unsqueeze_label
                )
                batch = {k: v for k, v in batch.items() if k != self.label_column}
            yield self._features(batch), label

    def _features(self, batch: dict[str, np.ndarray]) -> Any:
        columns, dtypes, unsqueeze = self.feature_columns, self.feature_column_dtypes, self.unsqueeze_features
        if isinstance(columns, dict):
            return {
                key: columns_tensor(
                    batch, list(group), dtypes[key] if isinstance(dtypes, dict) else dtypes, unsqueeze
                )
                for key, group in columns.items()
            }
        if columns and isinstance(columns[0], (list, tuple)):
            per_group = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes] * len(columns)
            return [
                columns_tensor(batch, list(group), dtype, unsqueeze)
                for group, dtype in zip(columns, per_group, strict=True)
            ]
        return columns_tensor(batch, list(columns) if columns else list(batch), dtypes, unsqueeze)

    def state_dict(self) -> dict[str, Any]:
        """The underlying batch iterator's position (``BatchIterable.state_dict``)."""
        return self.batches.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume where ``state`` was taken."""
        self.batches.load_state_dict(state)
