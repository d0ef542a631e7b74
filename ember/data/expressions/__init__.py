"""Column expressions (Ray Data's ``ray.data.expressions``): ``col("x") * 2 + lit(1) > col("y")``.

- ``core``: ``col``, ``lit``, operators (``Operation``), ``is_null``/``is_in``/``alias``/``cast``; evaluation.
- ``strings``, ``nested``, ``datetimes``: the ``.str``, ``.list``/``.struct``/``.map``/``.arr`` and ``.dt``
  namespaces (``col("name").str.upper()``), each a ``ComputeExpr``.
- ``steps``: ``WithColumn`` and ``EvaluatedFilter``, the plan steps that evaluate expressions.
- ``udf``: ``udf`` / ``pyarrow_udf`` (user functions of whole columns, ``UDFExpr``).
- ``generated``: ``random``, ``uuid``, ``monotonically_increasing_id``.
- ``columns``: ``star``, ``unnest``, ``download``.

Expressions made only of columns, literals and operators also become ``pyarrow.compute``
expressions (``to_pyarrow()``, pushed into parquet reads); the others are evaluated by ember on each
block, in ``Dataset.with_column`` and ``Dataset.filter(expr=)`` alike.

Example:
    >>> import ember.data
    >>> from ember.data.expressions import col, lit
    >>> ember.data.range(4).filter(expr=col("id") % 2 == lit(0)).take_all()
    [{'id': 0}, {'id': 2}]
"""

from ember.data.expressions.columns import DownloadExpr, StarExpr, UnnestExpr, download, expand, star, unnest
from ember.data.expressions.core import (
    AliasExpr,
    BinaryExpr,
    ColumnExpr,
    ComputeExpr,
    Evaluation,
    Expr,
    InExpr,
    LiteralExpr,
    Operation,
    UnaryExpr,
    col,
    evaluate,
    lit,
    walk,
)
from ember.data.expressions.generated import (
    MonotonicallyIncreasingIdExpr,
    RandomExpr,
    UUIDExpr,
    monotonically_increasing_id,
    random,
    uuid,
)
from ember.data.expressions.steps import (
    EvaluatedFilter,
    WithColumn,
    filter_transform,
    is_pyarrow_convertible,
    require_expr,
)
from ember.data.expressions.udf import UDFExpr, pyarrow_udf, udf

__all__ = [
    "AliasExpr",
    "BinaryExpr",
    "ColumnExpr",
    "ComputeExpr",
    "DownloadExpr",
    "EvaluatedFilter",
    "Evaluation",
    "Expr",
    "InExpr",
    "LiteralExpr",
    "MonotonicallyIncreasingIdExpr",
    "Operation",
    "RandomExpr",
    "StarExpr",
    "UDFExpr",
    "UUIDExpr",
    "UnaryExpr",
    "UnnestExpr",
    "WithColumn",
    "col",
    "download",
    "evaluate",
    "filter_transform",
    "expand",
    "is_pyarrow_convertible",
    "lit",
    "monotonically_increasing_id",
    "pyarrow_udf",
    "random",
    "require_expr",
    "star",
    "udf",
    "unnest",
    "uuid",
    "walk",
]
