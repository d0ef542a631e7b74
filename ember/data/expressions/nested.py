"""``Expr.list``, ``Expr.struct``, ``Expr.map`` and ``Expr.arr``: functions of nested values (Ray Data 2.60).

``list.len``/``get``/``slice`` and the struct accessors are one ``pyarrow.compute`` function each (as
in Ray); ``list.sort``, ``list.flatten``, ``map.keys``/``values`` and ``arr.to_list`` are ember's own
functions of Arrow arrays, computed on the list offsets (no per-row Python).

Example:
    >>> import pyarrow as pa
    >>> from ember.data.expressions import col, evaluate
    >>> t = pa.table({"items": [[3, 1, 2], [5, 4]]})
    >>> items = col("items")
    >>> [evaluate(e, t).to_pylist() for e in (items.list[0], items.list[1:3], items.list.sort())]
    [[3, 5], [[1, 2], [4]], [[1, 2, 3], [4, 5]]]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _one_array(values: Any) -> Any:
    """A ChunkedArray as one Array (offset arithmetic below needs one offsets buffer)."""
    import pyarrow as pa

    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def _is_list(arrow_type: Any) -> bool:
    import pyarrow as pa

    answer: bool = (
        pa.types.is_list(arrow_type)
        or pa.types.is_large_list(arrow_type)
        or pa.types.is_fixed_size_list(arrow_type)
    )
    return answer


def _list_array(lengths: Any, values: Any, nulls: Any, large: bool) -> Any:
    """A (large) list array of ``values`` cut into rows of ``lengths``; rows where ``nulls`` is true are
    null."""
    import numpy as np
    import pyarrow as pa

    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64 if large else np.int32)
    kind = pa.LargeListArray if large else pa.ListArray
    return kind.from_arrays(pa.array(offsets), values, mask=nulls)


def _null_mask(array: Any) -> Any:
    return array.is_null() if array.null_count else None


def sort_lists(values: Any, order: str, null_placement: str) -> Any:
    """Each row's list sorted (``order`` ``"ascending"``/``"descending"``, nulls ``"at_start"``/``"at_end"``);
    a fixed-size list stays fixed-size.

    Example:
        >>> import pyarrow as pa
        >>> sort_lists(pa.array([[2, None, 1], None]), "descending", "at_start").to_pylist()
        [[None, 2, 1], None]
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _one_array(values)
    original = array.type
    if not _is_list(original):
        raise TypeError(f"list.sort() needs a list column, not {original}")
    if pa.types.is_fixed_size_list(original):
        array = array.cast(pa.list_(original.value_type))
    flat, rows = pc.list_flatten(array), pc.list_parent_indices(array)
    keys = pa.table({"row": rows, "value": flat})
    order_of = pc.sort_indices(
        keys, sort_keys=[("row", "ascending", "at_end"), ("value", order, null_placement)]
    )
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy()
    result = _list_array(lengths, flat.take(order_of), _null_mask(array), pa.types.is_large_list(array.type))
    return result.cast(original) if pa.types.is_fixed_size_list(original) else result


def flatten_lists(values: Any) -> Any:
    """Each row's list of lists joined into one list (null inner lists add nothing; a null row stays null).

    Example:
        >>> import pyarrow as pa
        >>> flatten_lists(pa.array([[[1, 2], [3]], [None, [4]], None])).to_pylist()
        [[1, 2, 3], [4], None]
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _one_array(values)
    if not (_is_list(array.type) and _is_list(array.type.value_type)):
        raise TypeError(f"list.flatten() needs a list column whose elements are lists, not {array.type}")
    inner = pc.list_flatten(array)
    inner_lengths = pc.fill_null(pc.list_value_length(inner), 0).to_numpy()
    lengths = np.bincount(
        pc.list_parent_indices(array).to_numpy(), weights=inner_lengths, minlength=len(array)
    )
    return _list_array(
        lengths.astype(np.int64),
        pc.list_flatten(inner),
        _null_mask(array),
        pa.types.is_large_list(array.type),
    )


def map_part(values: Any, part: int) -> Any:
    """The keys (``part`` 0) or values (``part`` 1) of each row's map, as a list per row; a map is a
    ``map`` column or a list of structs whose first two fields are key and value.

    Example:
        >>> import pyarrow as pa
        >>> maps = pa.array([[("a", 1), ("b", 2)], None], pa.map_(pa.string(), pa.int64()))
        >>> map_part(maps, 1).to_pylist()
        [[1, 2], None]
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    array = _one_array(values)
    if isinstance(array, pa.MapArray):
        child = array.keys if part == 0 else array.items
        offsets = array.offsets.to_numpy()
        return _list_array(
            np.diff(offsets), child.slice(offsets[0], offsets[-1] - offsets[0]), _null_mask(array), False
        )
    if (
        isinstance(array, (pa.ListArray, pa.LargeListArray))
        and pa.types.is_struct(array.type.value_type)
        and array.type.value_type.num_fields >= 2
    ):
        lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy()
        child = pc.struct_field(pc.list_flatten(array), [part])
        return _list_array(lengths, child, _null_mask(array), isinstance(array, pa.LargeListArray))
    raise TypeError(
        f"map.{'keys' if part == 0 else 'values'}() needs a map column (or a list of key/value "
        f"structs), not {array.type}"
    )


def to_variable_lists(values: Any) -> Any:
    """List values as variable-length lists (a fixed-size list becomes a list; other lists stay).

    Example:
        >>> import pyarrow as pa
        >>> to_variable_lists(pa.array([[1, 2]], pa.list_(pa.int64(), 2))).type
        ListType(list<item: int64>)
    """
    import pyarrow as pa

    if not _is_list(values.type):
        raise TypeError(f"arr.to_list() needs a list column, not {values.type}")
    if pa.types.is_fixed_size_list(values.type):
        return values.cast(pa.list_(values.type.value_type))
    return values


class _Namespace:
    def __init__(self, expr: Any, make: Callable[..., Any]) -> None:
        self._expr, self._make = expr, make


class ListNamespace(_Namespace):
    """``expr.list``: ``len()``, ``get(i)`` / ``[i]``, ``slice(start, stop, step)`` / ``[start:stop:step]``,
    ``sort(order, null_placement)``, ``flatten()`` (Ray's list namespace).

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.expressions import col, evaluate
        >>> evaluate(col("x").list.flatten(), pa.table({"x": [[[1], [2, 3]]]})).to_pylist()
        [[1, 2, 3]]
    """

    def len(self) -> Any:
        """The number of items in each list (``pyarrow.compute.list_value_length``)."""
        return self._make("list_value_length", self._expr, label="list.len")

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, int) and not isinstance(key, bool):
            return self.get(key)
        if isinstance(key, slice):
            return self.slice(key.start, key.stop, key.step)
        raise TypeError(f"list indices are integers or slices, not {type(key).__name__}")

    def get(self, index: int) -> Any:
        """The item at ``index`` of each list (``pyarrow.compute.list_element``; out of range is an error)."""
        return self._make("list_element", self._expr, (index,), label="list.get")

    def slice(self, start: int | None = None, stop: int | None = None, step: int | None = None) -> Any:
        """Each list's items from ``start`` (0) to ``stop`` (the end) by ``step`` (1)
        (``pyarrow.compute.list_slice``)."""
        kwargs = {"start": 0 if start is None else start, "stop": stop, "step": 1 if step is None else step}
        return self._make("list_slice", self._expr, (), kwargs, label="list.slice")

    def sort(self, order: str = "ascending", null_placement: str = "at_end") -> Any:
        """Each list sorted (see `sort_lists`)."""
        if order not in ("ascending", "descending"):
            raise ValueError(f"list.sort(order={order!r}): order is 'ascending' or 'descending'")
        if null_placement not in ("at_start", "at_end"):
            raise ValueError(f"list.sort(null_placement={null_placement!r}): it is 'at_start' or 'at_end'")
        return self._make(sort_lists, self._expr, (order, null_placement), label="list.sort")

    def flatten(self) -> Any:
        """Each list of lists joined into one list (see `flatten_lists`)."""
        return self._make(flatten_lists, self._expr, label="list.flatten")


class StructNamespace(_Namespace):
    """``expr.struct``: ``field(name)`` / ``["name"]`` and ``field_by_index(i)`` / ``[i]`` (Ray's struct
    namespace).

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.expressions import col, evaluate
        >>> evaluate(col("u").struct[1], pa.table({"u": [{"a": 1, "b": "x"}]})).to_pylist()
        ['x']
    """

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, str):
            return self.field(key)
        if isinstance(key, int) and not isinstance(key, bool):
            return self.field_by_index(key)
        raise TypeError(f"struct indices are field names or integers, not {type(key).__name__}")

    def field(self, field_name: str) -> Any:
        """The field named ``field_name`` (``pyarrow.compute.struct_field``)."""
        return self._make("struct_field", self._expr, (field_name,), label="struct.field")

    def field_by_index(self, index: int) -> Any:
        """The field at position ``index`` (from 0)."""
        if not isinstance(index, int) or isinstance(index, bool):
            raise TypeError(f"a struct field index is an integer, not {type(index).__name__}")
        if index < 0:
            raise ValueError(f"a struct field index is 0 or more, not {index}")
        return self._make(
            "struct_field", self._expr, ([index],), label="struct.field_by_index", shown=(index,)
        )


class MapNamespace(_Namespace):
    """``expr.map``: ``keys()`` and ``values()`` of each row's map, as lists (see `map_part`).

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.expressions import col, evaluate
        >>> t = pa.table({"m": pa.array([[("k", 7)]], pa.map_(pa.string(), pa.int64()))})
        >>> evaluate(col("m").map.values(), t).to_pylist()
        [[7]]
    """

    def keys(self) -> Any:
        """The keys of each map, as a list."""
        return self._make(map_part, self._expr, (0,), label="map.keys", shown=())

    def values(self) -> Any:
        """The values of each map, as a list."""
        return self._make(map_part, self._expr, (1,), label="map.values", shown=())


class ArrayNamespace(_Namespace):
    """``expr.arr``: ``to_list()``, fixed-size lists as variable-length lists (see `to_variable_lists`).

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.expressions import col, evaluate
        >>> t = pa.table({"v": pa.array([[1, 2]], pa.list_(pa.int64(), 2))})
        >>> evaluate(col("v").arr.to_list(), t).to_pylist()
        [[1, 2]]
    """

    def to_list(self) -> Any:
        """The lists as variable-length lists."""
        return self._make(to_variable_lists, self._expr, label="arr.to_list")
