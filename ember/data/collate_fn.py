"""The collate_fn classes of ``iter_torch_batches`` (Ray Data 2.60's ``ray.data.collate_fn``).

The class a ``collate_fn`` subclasses picks the batch type it is handed, as in Ray:
``ArrowBatchCollateFn`` gets a ``pyarrow.Table``, ``NumpyBatchCollateFn`` a dict of numpy arrays,
``PandasBatchCollateFn`` a ``pandas.DataFrame``; a plain function (deprecated in Ray 2.47) gets a
dict of numpy arrays. What it returns goes to ``device`` (and is pinned with ``pin_memory=True``)
only when it is a *tensor batch*: a tensor, a list/tuple of tensors, a list/tuple of such lists, or a
mapping of names to tensors or to lists of tensors (``is_tensor_batch_type``). Lists of tensors
inside a list or a mapping are concatenated along the first dimension on the way, as Ray's
``move_tensors_to_device`` does. Anything else comes back exactly as the collate_fn returned it.

torch and pandas are imported when a batch is collated, not when this module is.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ember.errors import ConfigError

if TYPE_CHECKING:
    from types import FrameType

    import numpy as np
    import pyarrow
    import torch

BatchType = TypeVar("BatchType")

__all__ = [
    "ArrowBatchCollateFn",
    "CollateFn",
    "DefaultCollateFn",
    "NumpyBatchCollateFn",
    "PandasBatchCollateFn",
    "is_tensor_batch_type",
]


class CollateFn(Generic[BatchType]):
    """The interface of an ``iter_torch_batches`` collate_fn: a callable class given one batch.

    Example:
        >>> from ember.data.collate_fn import CollateFn, NumpyBatchCollateFn
        >>> issubclass(NumpyBatchCollateFn, CollateFn)
        True
    """

    @abc.abstractmethod
    def __call__(self, batch: BatchType) -> Any:
        """The collated form of ``batch`` (whatever the model expects)."""


class ArrowBatchCollateFn(CollateFn["pyarrow.Table"]):
    """A collate_fn handed each batch as a ``pyarrow.Table`` (Ray's fastest path). Subclass it.

    Example:
        >>> import torch
        >>> from ember.data.collate_fn import ArrowBatchCollateFn
        >>> class PlusFive(ArrowBatchCollateFn):
        ...     def __call__(self, batch):
        ...         return torch.as_tensor(batch["x"].to_numpy() + 5)
        >>> ds = ember.data.from_items([{"x": 1}, {"x": 3}])
        >>> next(iter(ds.iter_torch_batches(collate_fn=PlusFive())))
        tensor([6, 8])
    """

    def __call__(self, batch: pyarrow.Table) -> Any:
        """The collated form of the Arrow ``batch``; a subclass says how."""


class NumpyBatchCollateFn(CollateFn["dict[str, np.ndarray]"]):
    """A collate_fn handed each batch as a dict of numpy arrays. Subclass it.

    Example:
        >>> import numpy as np, torch
        >>> from ember.data.collate_fn import NumpyBatchCollateFn
        >>> class Stack(NumpyBatchCollateFn):
        ...     def __call__(self, batch):
        ...         return torch.as_tensor(np.stack([batch["x"], batch["y"]]))
        >>> ds = ember.data.from_items([{"x": 1, "y": 2}, {"x": 3, "y": 4}])
        >>> next(iter(ds.iter_torch_batches(collate_fn=Stack())))
        tensor([[1, 3],
                [2, 4]])
    """

    def __call__(self, batch: dict[str, np.ndarray]) -> Any:
        """The collated form of the numpy ``batch``; a subclass says how."""


class PandasBatchCollateFn(CollateFn["Any"]):
    """A collate_fn handed each batch as a ``pandas.DataFrame``. Subclass it.

    Example:
        >>> import torch
        >>> from ember.data.collate_fn import PandasBatchCollateFn
        >>> class Sum(PandasBatchCollateFn):
        ...     def __call__(self, batch):
        ...         return torch.as_tensor(batch.sum(axis=1).to_numpy(copy=True))
        >>> ds = ember.data.from_items([{"x": 1, "y": 2}, {"x": 3, "y": 4}])
        >>> next(iter(ds.iter_torch_batches(collate_fn=Sum())))
        tensor([3, 7])
    """

    def __call__(self, batch: Any) -> Any:
        """The collated form of the pandas ``batch``; a subclass says how."""


class DefaultCollateFn(ArrowBatchCollateFn):
    """Ray's default conversion as a collate_fn: each column of the Arrow batch becomes a tensor
    (``dtypes``: one torch dtype or {column: dtype}; a column missing from the dict is a KeyError, as
    in Ray). ``combine_chunks=False`` gives each column as a list of tensors, one per Arrow chunk,
    which ``iter_torch_batches`` concatenates on the way to the device; ``True`` one tensor per
    column. ``num_workers`` is Ray's thread-pool size for the conversion: ember converts on the
    prefetch thread and keeps the value only so that the object is Ray's.

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.collate_fn import DefaultCollateFn
        >>> DefaultCollateFn(combine_chunks=True)(pa.table({"x": [1, 2]}))
        {'x': tensor([1, 2])}
        >>> DefaultCollateFn()(pa.concat_tables([pa.table({"x": [1, 2]}), pa.table({"x": [3]})]))
        {'x': [tensor([1, 2]), tensor([3])]}
    """

    def __init__(
        self,
        dtypes: torch.dtype | dict[str, torch.dtype] | None = None,
        combine_chunks: bool = False,
        num_workers: int = 4,
    ) -> None:
        super().__init__()
        self.dtypes = dtypes
        self.combine_chunks = combine_chunks
        self.num_workers = num_workers

    def __call__(self, batch: pyarrow.Table) -> dict[str, Any]:
        """Each column of ``batch`` as a tensor (or a list of per-chunk tensors)."""
        from ember.data.block import block_to_numpy

        if self.combine_chunks:
            return {
                name: _tensor(values, self._dtype(name)) for name, values in block_to_numpy(batch).items()
            }
        return {
            name: [_tensor(values, self._dtype(name)) for values in _chunk_arrays(batch, name)]
            for name in batch.column_names
        }

    def _dtype(self, name: str) -> Any:
        return self.dtypes[name] if isinstance(self.dtypes, dict) else self.dtypes


def _chunk_arrays(table: pyarrow.Table, name: str) -> list[Any]:
    """Column ``name`` as one numpy array per Arrow chunk (one empty array for an empty column)."""
    import pyarrow as pa

    from ember.data.block import block_to_numpy

    column = table.column(name)
    chunks = column.chunks or [pa.array([], type=column.type)]
    return [block_to_numpy(pa.table({name: chunk}))[name] for chunk in chunks]


def _tensor(values: Any, dtype: Any) -> torch.Tensor:
    """A tensor holding a copy of ``values`` (Arrow memory is read-only and shared between batches)."""
    import numpy as np
    import torch

    if values.dtype == object:
        raise RuntimeError(
            "a numpy array of object dtype (strings, or tensors of different shapes) cannot "
            "become a torch tensor; convert it in a collate_fn"
        )
    return torch.as_tensor(np.array(values, copy=True), dtype=dtype)


# ---------------------------------------------------------------------- what iter_torch_batches does with one


def batch_format_for(collate_fn: Any) -> str:
    """The batch format ``collate_fn`` is handed (Ray's rule: by the class it subclasses).

    Example:
        >>> batch_format_for(DefaultCollateFn()), batch_format_for(lambda batch: batch)
        ('pyarrow', 'numpy')
    """
    if isinstance(collate_fn, ArrowBatchCollateFn):
        return "pyarrow"
    if isinstance(collate_fn, NumpyBatchCollateFn):
        return "numpy"
    if isinstance(collate_fn, PandasBatchCollateFn):
        return "pandas"
    if callable(collate_fn):
        return "numpy"
    raise ConfigError(
        f"iter_torch_batches(collate_fn={collate_fn!r}): not callable; pass a function or an "
        "instance of an ArrowBatchCollateFn, NumpyBatchCollateFn or PandasBatchCollateFn subclass"
    )


def warn_if_plain_function(collate_fn: Callable[..., Any]) -> None:
    """Ray 2.47 deprecated plain functions as collate_fn; ember warns as Ray does, at the user's line."""
    if isinstance(collate_fn, CollateFn):
        return
    import warnings

    warnings.warn(
        "Passing a function to `iter_torch_batches(collate_fn)` is deprecated in Ray 2.47. Please switch "
        "to using a callable class that inherits from `ArrowBatchCollateFn`, `NumpyBatchCollateFn`, or "
        "`PandasBatchCollateFn`.",
        DeprecationWarning,
        stacklevel=_first_frame_outside_ember(),
    )


def _first_frame_outside_ember() -> int:
    """The ``stacklevel`` of the nearest caller outside the ember package (whichever path led here)."""
    import os
    import sys

    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _is_tensor_sequence(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(_is_tensor(v) for v in value)


def is_tensor_batch_type(batch: Any) -> bool:
    """Whether ``iter_torch_batches`` moves (and pins) ``batch``: a tensor, a list/tuple of tensors or of
    such lists, or a mapping of names to tensors or to lists/tuples of tensors.

    Example:
        >>> import torch
        >>> is_tensor_batch_type({"x": torch.ones(1)}), is_tensor_batch_type({"x": {"y": torch.ones(1)}})
        (True, False)
    """
    if _is_tensor(batch) or _is_tensor_sequence(batch):
        return True
    if isinstance(batch, (list, tuple)):
        return all(_is_tensor_sequence(v) for v in batch)
    if isinstance(batch, Mapping):
        values = list(batch.values())
        return all(_is_tensor(v) for v in values) or all(_is_tensor_sequence(v) for v in values)
    return False


def pin_tensor_batch(batch: Any) -> Any:
    """``batch`` with its CPU tensors in page-locked memory, when it is a tensor batch; else as it is."""
    return _pin(batch) if is_tensor_batch_type(batch) else batch


def _pin(value: Any) -> Any:
    if _is_tensor(value):
        return value.pin_memory() if value.device.type == "cpu" and not value.is_pinned() else value
    if isinstance(value, Mapping):
        return {k: _pin(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_pin(v) for v in value)
    return value


def move_tensor_batch(batch: Any, device: Any) -> Any:
    """A tensor batch on ``device`` (None, ember's: where it is), lists of tensors inside a list or a
    mapping joined along the first dimension; anything else as it is.

    Example:
        >>> import torch
        >>> move_tensor_batch({"x": [torch.tensor([1, 2]), torch.tensor([3])]}, "cpu")
        {'x': tensor([1, 2, 3])}
    """
    if not is_tensor_batch_type(batch):
        return batch
    if _is_tensor(batch):
        return _to(batch, device)
    if _is_tensor_sequence(batch):
        return type(batch)([_to(t, device) for t in batch])
    if isinstance(batch, (list, tuple)):
        return type(batch)([_concat(seq, device) for seq in batch])
    if all(_is_tensor(v) for v in batch.values()):
        return {k: _to(v, device) for k, v in batch.items()}
    return {k: _concat(v, device) for k, v in batch.items()}


def _to(tensor: torch.Tensor, device: Any) -> torch.Tensor:
    return tensor if device is None else tensor.to(device, non_blocking=True)


def _concat(tensors: Any, device: Any) -> torch.Tensor:
    """One tensor on ``device`` from a sequence of same-dtype tensors, joined along dimension 0."""
    import torch

    if not tensors:
        raise ValueError("cannot join an empty sequence of tensors")
    if len(tensors) == 1 and (device is None or tensors[0].device == torch.device(device)):
        only: torch.Tensor = tensors[0]
        return only
    if len({t.dtype for t in tensors}) > 1 or len({tuple(t.shape[1:]) for t in tensors}) > 1:
        raise ValueError(
            f"cannot join tensors of dtypes {[t.dtype for t in tensors]} and shapes "
            f"{[tuple(t.shape) for t in tensors]}; give them one dtype and one shape after the first "
            "dimension"
        )
    return torch.cat([_to(t, device) for t in tensors])
