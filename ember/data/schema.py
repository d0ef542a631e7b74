"""The schema of a Dataset, printed the way Ray Data prints it."""

from __future__ import annotations

import pyarrow as pa

from ember.data.tensor_types import PythonObjectType, VariableShapeTensorType


def format_type(arrow_type: pa.DataType) -> str:
    """A column type as Ray Data 2.60 prints it: tensor columns as Ray's tensor types
    (``ArrowTensorTypeV2(shape=(32, 32, 3), dtype=uint8)``,
    ``ArrowVariableShapedTensorType(ndim=3, dtype=uint8)``).

    Example:
        >>> import pyarrow as pa
        >>> format_type(pa.fixed_shape_tensor(pa.uint8(), (32, 32, 3)))
        'ArrowTensorTypeV2(shape=(32, 32, 3), dtype=uint8)'
    """
    if isinstance(arrow_type, pa.FixedShapeTensorType):
        return f"ArrowTensorTypeV2(shape={tuple(arrow_type.shape)}, dtype={arrow_type.value_type})"
    if isinstance(arrow_type, VariableShapeTensorType):
        return f"ArrowVariableShapedTensorType(ndim={arrow_type.ndim}, dtype={arrow_type.value_type})"
    if isinstance(arrow_type, PythonObjectType):
        return "<class 'object'>"
    return str(arrow_type)


class Schema:
    """Column names and types of a Dataset.

    Example:
        >>> import ember.data
        >>> print(ember.data.range(3).schema())
        Column  Type
        ------  ----
        id      int64
    """

    def __init__(self, arrow_schema: pa.Schema) -> None:
        self.base_schema = arrow_schema

    @property
    def names(self) -> list[str]:
        """Column names, in order."""
        return list(self.base_schema.names)

    @property
    def types(self) -> list[pa.DataType]:
        """Arrow types of the columns, in order."""
        return list(self.base_schema.types)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and self.base_schema == other.base_schema

    def __repr__(self) -> str:
        rows = [(name, format_type(t)) for name, t in zip(self.names, self.types, strict=False)]
        width = max([len("Column")] + [len(name) for name, _ in rows])
        lines = [f"{'Column':<{width}}  Type", f"{'------':<{width}}  ----"]
        lines += [f"{name:<{width}}  {type_text}" for name, type_text in rows]
        return "\n".join(lines)

    __str__ = __repr__
