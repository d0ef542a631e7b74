"""Column expressions (Ray Data's ``ray.data.expressions``): ``col("x") * 2 + lit(1) > col("y")``.

An expression is a small tree built with Python operators; nothing is computed when it is built.
``expr.to_pyarrow()`` turns it into a ``pyarrow.compute.Expression`` (what ``Dataset.filter(expr=...)``
and ``read_parquet(filter=...)`` hand to pyarrow); ``Dataset.with_column(name, expr)`` evaluates it on
each block with the same pyarrow compute kernels. Operators map to kernels as in Ray 2.60: ``+`` on
strings concatenates, ``%`` and ``//`` are floor-based (``a - floor(a / b) * b``), ``&``/``|`` are
Kleene (null-aware) logic, ``~`` is ``invert``.

Example:
    >>> import pyarrow as pa
    >>> from ember.data.expressions import col, lit
    >>> expr = (col("x") * 2 + lit(1)) > col("y")
    >>> expr
    ((col('x') * 2) + 1) > col('y')
    >>> evaluate(expr, pa.table({"x": [1, 5], "y": [4, 4]})).to_pylist()
    [False, True]
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

from ember.data.block import Block
from ember.data.expressions.datetimes import DatetimeNamespace
from ember.data.expressions.nested import ArrayNamespace, ListNamespace, MapNamespace, StructNamespace
from ember.data.expressions.strings import StringNamespace
from ember.errors import ConfigError, DataError


def _kernels() -> dict[str, Callable[..., Any]]:
    """Operator name -> pyarrow.compute function; works on arrays and on pyarrow Expressions alike."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def add(left: Any, right: Any) -> Any:
        if _is_string(left) or _is_string(right):
            return pc.binary_join_element_wise(left, right, "")
        return pc.add(left, right)

    def _is_string(value: Any) -> bool:
        kind = getattr(value, "type", None)
        return kind is not None and (pa.types.is_string(kind) or pa.types.is_large_string(kind))

    return {
        "+": add,
        "-": pc.subtract,
        "*": pc.multiply,
        "/": pc.divide,
        "%": lambda a, b: pc.subtract(a, pc.multiply(pc.floor(pc.divide(a, b)), b)),
        "//": lambda a, b: pc.floor(pc.divide(a, b)),
        ">": pc.greater,
        "<": pc.less,
        ">=": pc.greater_equal,
        "<=": pc.less_equal,
        "==": pc.equal,
        "!=": pc.not_equal,
        "&": pc.and_kleene,
        "|": pc.or_kleene,
        "~": pc.invert,
        "is_null": pc.is_null,
        "is_not_null": pc.is_valid,
        "power": pc.power,
        **{name: getattr(pc, kernel) for name, kernel in _MATH.items()},
    }


#: Ray's one-argument math methods (``col("x").abs()``...) and the pyarrow kernel each one is, as in Ray.
_MATH = {
    "ceil": "ceil",
    "floor": "floor",
    "round": "round",
    "trunc": "trunc",
    "ln": "ln",
    "log10": "log10",
    "log2": "log2",
    "exp": "exp",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "negate": "negate_checked",
    "sign": "sign",
    "abs": "abs_checked",
}


class Operation(str, Enum):
    """The operators of ``BinaryExpr`` / ``UnaryExpr`` (Ray's ``Operation``), for building them by hand:
    ``BinaryExpr(Operation.ADD, col("x"), lit(5))`` is ``col("x") + 5``. ``IN`` / ``NOT_IN`` are
    ``expr.is_in(values)`` / ``expr.not_in(values)``.

    Example:
        >>> BinaryExpr(Operation.ADD, col("x"), lit(5))
        col('x') + 5
    """

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    MOD = "mod"
    FLOORDIV = "floordiv"
    GT = "gt"
    LT = "lt"
    GE = "ge"
    LE = "le"
    EQ = "eq"
    NE = "ne"
    AND = "and"
    OR = "or"
    NOT = "not"
    IS_NULL = "is_null"
    IS_NOT_NULL = "is_not_null"
    IN = "in"
    NOT_IN = "not_in"


#: Each Operation as the operator name ember's expressions keep (what ``_kernels`` maps to a kernel).
_OPERATOR = {
    Operation.ADD: "+",
    Operation.SUB: "-",
    Operation.MUL: "*",
    Operation.DIV: "/",
    Operation.MOD: "%",
    Operation.FLOORDIV: "//",
    Operation.GT: ">",
    Operation.LT: "<",
    Operation.GE: ">=",
    Operation.LE: "<=",
    Operation.EQ: "==",
    Operation.NE: "!=",
    Operation.AND: "&",
    Operation.OR: "|",
    Operation.NOT: "~",
    Operation.IS_NULL: "is_null",
    Operation.IS_NOT_NULL: "is_not_null",
}


def _operator(op: Operation | str, arity: str) -> str:
    """``op`` (an Operation or ember's operator name) as ember's operator name."""
    if not isinstance(op, Operation):
        return op
    if op not in _OPERATOR:
        raise ConfigError(
            f"{arity}({op}, ...): build membership tests with expr.is_in(values) / expr.not_in(values)"
        )
    return _OPERATOR[op]


class Expr:
    """A column expression; combine with ``+ - * / % // > < >= <= == != & | ~``.

    Example:
        >>> from ember.data.expressions import col
        >>> (col("a") >= 3) & ~col("b").is_null()
        (col('a') >= 3) & (~(is_null(col('b'))))
    """

    __hash__ = None  # type: ignore[assignment]  # == builds an expression, so Exprs are not hashable
    #: Whether evaluating it runs user Python, it maps onto a pyarrow Expression, it is several columns,
    #: it gives the same values each time it is evaluated.
    _runs_user_code = False
    _pyarrow_convertible = True
    _several_columns = False
    _idempotent = True

    def is_idempotent(self) -> bool:
        """False when evaluating it again gives other values (``random``, ``uuid``,
        ``monotonically_increasing_id``, or an expression containing one), as Ray's.

        Example:
            >>> from ember.data.expressions import col, uuid
            >>> (col("a") + 1).is_idempotent(), uuid().str.upper().is_idempotent()
            (True, False)
        """
        return all(e._idempotent for e in walk(self))

    def structurally_equals(self, other: Any) -> bool:
        """Whether ``other`` is the same expression tree: the same kinds of nodes with equal columns,
        literals (of the same type), operators, arguments and the same user functions (Ray's
        ``structurally_equals``; ``==`` builds a comparison instead).

        Example:
            >>> from ember.data.expressions import col, lit
            >>> (col("a") + lit(1)).structurally_equals(col("a") + 1), col("a").structurally_equals(col("b"))
            (True, False)
        """
        return type(self) is type(other) and _same_part(vars(self), vars(other))

    def get_type(self, input_schema: Any) -> Any:
        """Refused: ember has no static type resolution of expressions."""
        raise _no_static_types("get_type")

    def nullable(self, input_schema: Any) -> bool:
        """Refused: ember has no static type resolution of expressions."""
        raise _no_static_types("nullable")

    def to_field(self, input_schema: Any) -> Any:
        """Refused: ember has no static type resolution of expressions.

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> col("a").to_field(pa.schema([("a", pa.int64())]))
            Traceback (most recent call last):
            ember.errors.ConfigError: Expr.to_field(): ember resolves an expression's type from the values;
            evaluate it (Dataset.with_column(name, expr).schema()) instead
        """
        raise _no_static_types("to_field")

    def expand_projection(self, input_schema: Any) -> Any:
        """Refused: Ray's planner hook; ember expands ``unnest`` when it evaluates ``with_columns``."""
        raise ConfigError(
            "Expr.expand_projection(): ember expands unnest() when Dataset.with_columns evaluates it; "
            "pass the expression to Dataset.with_columns"
        )

    def _children(self) -> tuple[Expr, ...]:
        return ()

    def to_pyarrow(self) -> Any:
        """This expression as a ``pyarrow.compute.Expression``.

        Example:
            >>> from ember.data.expressions import col
            >>> (col("a") > 1).to_pyarrow()
            <pyarrow.compute.Expression (a > 1)>
        """
        raise DataError(
            f"{self!r} cannot become a pyarrow expression (it is computed by ember, not by a pyarrow "
            "kernel); use it in Dataset.with_column or Dataset.filter(expr=)"
        )

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        raise NotImplementedError

    @property
    def name(self) -> str | None:
        """The column name this expression produces (a bare ``col`` or an ``alias``), else None.

        Example:
            >>> from ember.data.expressions import col
            >>> col("a").name, (col("a") + 1).name, (col("a") + 1).alias("b").name
            ('a', None, 'b')
        """
        return None

    def _op(self, op: str, other: Any, reverse: bool = False) -> Expr:
        other = other if isinstance(other, Expr) else LiteralExpr(other)
        return BinaryExpr(op, other, self) if reverse else BinaryExpr(op, self, other)

    def __add__(self, other: Any) -> Expr:
        return self._op("+", other)

    def __radd__(self, other: Any) -> Expr:
        return self._op("+", other, True)

    def __sub__(self, other: Any) -> Expr:
        return self._op("-", other)

    def __rsub__(self, other: Any) -> Expr:
        return self._op("-", other, True)

    def __mul__(self, other: Any) -> Expr:
        return self._op("*", other)

    def __rmul__(self, other: Any) -> Expr:
        return self._op("*", other, True)

    def __truediv__(self, other: Any) -> Expr:
        return self._op("/", other)

    def __rtruediv__(self, other: Any) -> Expr:
        return self._op("/", other, True)

    def __mod__(self, other: Any) -> Expr:
        return self._op("%", other)

    def __rmod__(self, other: Any) -> Expr:
        return self._op("%", other, True)

    def __floordiv__(self, other: Any) -> Expr:
        return self._op("//", other)

    def __rfloordiv__(self, other: Any) -> Expr:
        return self._op("//", other, True)

    def __gt__(self, other: Any) -> Expr:
        return self._op(">", other)

    def __lt__(self, other: Any) -> Expr:
        return self._op("<", other)

    def __ge__(self, other: Any) -> Expr:
        return self._op(">=", other)

    def __le__(self, other: Any) -> Expr:
        return self._op("<=", other)

    def __eq__(self, other: Any) -> Expr:  # type: ignore[override]  # == builds an expression, as in Ray
        return self._op("==", other)

    def __ne__(self, other: Any) -> Expr:  # type: ignore[override]  # != builds an expression, as in Ray
        return self._op("!=", other)

    def __and__(self, other: Any) -> Expr:
        return self._op("&", other)

    def __rand__(self, other: Any) -> Expr:
        return self._op("&", other, True)

    def __or__(self, other: Any) -> Expr:
        return self._op("|", other)

    def __ror__(self, other: Any) -> Expr:
        return self._op("|", other, True)

    def __invert__(self) -> Expr:
        return UnaryExpr("~", self)

    def __bool__(self) -> bool:
        raise DataError(
            "an expression has no truth value; combine conditions with & | ~ instead of and/or/not, "
            "and wrap each comparison in parentheses"
        )

    def is_null(self) -> Expr:
        """True where the value is null.

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> evaluate(col("a").is_null(), pa.table({"a": [1, None]})).to_pylist()
            [False, True]
        """
        return UnaryExpr("is_null", self)

    def is_not_null(self) -> Expr:
        """True where the value is not null.

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> evaluate(col("a").is_not_null(), pa.table({"a": [1, None]})).to_pylist()
            [True, False]
        """
        return UnaryExpr("is_not_null", self)

    def is_in(self, values: list[Any]) -> Expr:
        """True where the value is one of ``values`` (a list).

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> evaluate(col("a").is_in([1, 3]), pa.table({"a": [1, 2, 3]})).to_pylist()
            [True, False, True]
        """
        return InExpr(self, list(values), negate=False)

    def not_in(self, values: list[Any]) -> Expr:
        """True where the value is none of ``values``.

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> evaluate(col("a").not_in([1, 3]), pa.table({"a": [1, 2, 3]})).to_pylist()
            [False, True, False]
        """
        return InExpr(self, list(values), negate=True)

    def power(self, exponent: Any) -> Expr:
        """Each value to the power ``exponent`` (a number or an expression; Ray's ``pc.power``).

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> evaluate(col("x").power(2), pa.table({"x": [2, 3]})).to_pylist()
            [4, 9]
        """
        return self._op("power", exponent)

    def _math(self, name: str) -> Expr:
        return UnaryExpr(name, self)

    def abs(self) -> Expr:
        """Absolute value (overflow is an error, Ray's ``abs_checked``).

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> evaluate(col("x").abs(), pa.table({"x": [5, -3]})).to_pylist()
            [5, 3]
        """
        return self._math("abs")

    def negate(self) -> Expr:
        """``-x`` (overflow is an error, Ray's ``negate_checked``).

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> evaluate(col("x").negate(), pa.table({"x": [5, -3]})).to_pylist()
            [-5, 3]
        """
        return self._math("negate")

    def sign(self) -> Expr:
        """-1, 0 or 1 by the sign of each value.

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> evaluate(col("x").sign(), pa.table({"x": [5, -3, 0]})).to_pylist()
            [1, -1, 0]
        """
        return self._math("sign")

    def ceil(self) -> Expr:
        """The smallest integral value not below each value (``floor``, ``round`` (half to even) and
        ``trunc`` likewise, as pyarrow computes them).

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col
            >>> t = pa.table({"x": [-1.5, 0.25, 2.5]})
            >>> [evaluate(e, t).to_pylist() for e in (col("x").ceil(), col("x").floor(), col("x").round(),
            ...     col("x").trunc())]
            [[-1.0, 1.0, 3.0], [-2.0, 0.0, 2.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 2.0]]
        """
        return self._math("ceil")

    def floor(self) -> Expr:
        """The largest integral value not above each value (see `ceil`)."""
        return self._math("floor")

    def round(self) -> Expr:
        """Each value rounded to an integral value, half to even (see `ceil`)."""
        return self._math("round")

    def trunc(self) -> Expr:
        """Each value with its fraction dropped (see `ceil`)."""
        return self._math("trunc")

    def ln(self) -> Expr:
        """Natural logarithm (``log10``, ``log2`` and ``exp`` likewise).

        Example:
            >>> import pyarrow as pa, pyarrow.compute as pc
            >>> from ember.data.expressions import col
            >>> t = pa.table({"x": [1.0, 4.0]})
            >>> x = col("x")
            >>> [pc.round(evaluate(e, t), 3).to_pylist() for e in (x.ln(), x.log10(), x.log2(), x.exp())]
            [[0.0, 1.386], [0.0, 0.602], [0.0, 2.0], [2.718, 54.598]]
        """
        return self._math("ln")

    def log10(self) -> Expr:
        """Base-10 logarithm (see `ln`)."""
        return self._math("log10")

    def log2(self) -> Expr:
        """Base-2 logarithm (see `ln`)."""
        return self._math("log2")

    def exp(self) -> Expr:
        """e to the power of each value (see `ln`)."""
        return self._math("exp")

    def sin(self) -> Expr:
        """Sine, in radians (``cos``, ``tan``, ``asin``, ``acos``, ``atan`` likewise).

        Example:
            >>> import pyarrow as pa, pyarrow.compute as pc
            >>> from ember.data.expressions import col
            >>> t = pa.table({"x": [0.0, 0.5]})
            >>> [pc.round(evaluate(getattr(col("x"), f)(), t), 3).to_pylist() for f in ("sin", "cos", "tan",
            ...     "asin", "acos", "atan")]
            [[0.0, 0.479], [1.0, 0.878], [0.0, 0.546], [0.0, 0.524], [1.571, 1.047], [0.0, 0.464]]
        """
        return self._math("sin")

    def cos(self) -> Expr:
        """Cosine (see `sin`)."""
        return self._math("cos")

    def tan(self) -> Expr:
        """Tangent (see `sin`)."""
        return self._math("tan")

    def asin(self) -> Expr:
        """Arcsine (see `sin`)."""
        return self._math("asin")

    def acos(self) -> Expr:
        """Arccosine (see `sin`)."""
        return self._math("acos")

    def atan(self) -> Expr:
        """Arctangent (see `sin`)."""
        return self._math("atan")

    def cast(self, target_type: Any, *, safe: bool = True) -> Expr:
        """The values converted to ``target_type``, an Arrow-backed ``ember.data.datatype.DataType``
        (Ray's ``Expr.cast``); ``safe=True`` makes overflow and lossy conversions an error.

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.datatype import DataType
            >>> evaluate(col("x").cast(DataType.string()), pa.table({"x": [1, 2]})).to_pylist()
            ['1', '2']
        """
        from ember.data.datatype import DataType

        if not isinstance(target_type, DataType):
            raise TypeError(
                f"cast() takes an ember.data.datatype.DataType, not {type(target_type).__name__}; "
                "e.g. DataType.int64() or DataType.string()"
            )
        if target_type.is_python_type():
            raise TypeError(
                f"cast({target_type!r}): a Python-type DataType has no Arrow type to cast to; use an "
                "Arrow DataType such as DataType.int64()"
            )
        return ComputeExpr(
            _cast,
            self,
            (target_type.to_arrow_dtype(),),
            {"safe": safe},
            label="cast",
            shown=(target_type,),
            on_pyarrow_expressions=True,
        )

    @property
    def str(self) -> StringNamespace:
        """String functions of this expression's values (Ray's ``Expr.str``): ``col("name").str.upper()``.

        Example:
            >>> import pyarrow as pa
            >>> evaluate(col("name").str.starts_with("A"), pa.table({"name": ["Alice", "Bob"]})).to_pylist()
            [True, False]
        """
        return StringNamespace(self, ComputeExpr)

    @property
    def list(self) -> ListNamespace:
        """List functions of this expression's values (Ray's ``Expr.list``): ``col("items").list[0]``.

        Example:
            >>> import pyarrow as pa
            >>> evaluate(col("items").list.len(), pa.table({"items": [[1, 2, 3], [4]]})).to_pylist()
            [3, 1]
        """
        return ListNamespace(self, ComputeExpr)

    @property
    def struct(self) -> StructNamespace:
        """Struct field access (Ray's ``Expr.struct``): ``col("user").struct["age"]``.

        Example:
            >>> import pyarrow as pa
            >>> evaluate(col("user").struct["age"], pa.table({"user": [{"age": 30}]})).to_pylist()
            [30]
        """
        return StructNamespace(self, ComputeExpr)

    @property
    def map(self) -> MapNamespace:
        """Map functions (Ray's ``Expr.map``): ``col("m").map.keys()``.

        Example:
            >>> import pyarrow as pa
            >>> t = pa.table({"m": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64()))})
            >>> evaluate(col("m").map.keys(), t).to_pylist()
            [['a']]
        """
        return MapNamespace(self, ComputeExpr)

    @property
    def dt(self) -> DatetimeNamespace:
        """Date and time functions (Ray's ``Expr.dt``): ``col("t").dt.year()``.

        Example:
            >>> import datetime, pyarrow as pa
            >>> evaluate(col("t").dt.year(), pa.table({"t": [datetime.datetime(2024, 5, 1)]})).to_pylist()
            [2024]
        """
        return DatetimeNamespace(self, ComputeExpr)

    @property
    def arr(self) -> ArrayNamespace:
        """Array functions (Ray's ``Expr.arr``): ``col("v").arr.to_list()``.

        Example:
            >>> import pyarrow as pa
            >>> t = pa.table({"v": pa.array([[1, 2]], pa.list_(pa.int64(), 2))})
            >>> evaluate(col("v").arr.to_list(), t).type
            ListType(list<item: int64>)
        """
        return ArrayNamespace(self, ComputeExpr)

    def alias(self, name: builtins.str) -> Expr:  # builtins.: `str` in this class is the .str namespace
        """The same values under the name ``name``.

        Example:
            >>> from ember.data.expressions import col
            >>> (col("a") * 2).alias("b")
            (col('a') * 2).alias('b')
        """
        return AliasExpr(self, name)


def _no_static_types(method: str) -> ConfigError:
    return ConfigError(
        f"Expr.{method}(): ember resolves an expression's type from the values; evaluate it "
        "(Dataset.with_column(name, expr).schema()) instead"
    )


def _same_part(mine: Any, theirs: Any) -> bool:
    """Structural equality of two expressions' parts: sub-expressions by structure, containers item by
    item, functions by identity, other values by type and value."""
    if isinstance(mine, Expr):
        return isinstance(theirs, Expr) and mine.structurally_equals(theirs)
    if type(mine) is not type(theirs):
        return False
    if isinstance(mine, dict):
        return mine.keys() == theirs.keys() and all(_same_part(mine[k], theirs[k]) for k in mine)
    if isinstance(mine, (list, tuple)):
        return len(mine) == len(theirs) and all(_same_part(a, b) for a, b in zip(mine, theirs, strict=True))
    if callable(mine) and not isinstance(mine, type):
        return mine is theirs
    try:
        return bool(mine == theirs)
    except (
        TypeError,
        ValueError,
    ):  # values without a single truth value (arrays) are the same only if identical
        return mine is theirs


class ColumnExpr(Expr):
    """The values of one column (``col(name)``)."""

    def __init__(self, column: str) -> None:
        self.column = column

    @property
    def name(self) -> str:
        return self.column

    def to_pyarrow(self) -> Any:
        import pyarrow.compute as pc

        return pc.field(self.column)

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        if self.column not in table.column_names:
            raise DataError(
                f"expression: no column {self.column!r}; the dataset has columns {table.column_names}"
            )
        return table.column(self.column)

    def __repr__(self) -> str:
        return f"col({self.column!r})"


class LiteralExpr(Expr):
    """A constant (``lit(value)``)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def to_pyarrow(self) -> Any:
        import pyarrow.compute as pc

        return pc.scalar(self.value)

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        import pyarrow as pa

        return pa.scalar(self.value)

    def __repr__(self) -> str:
        return repr(self.value)


class BinaryExpr(Expr):
    """``left op right``; ``op`` is an ``Operation`` or ember's operator name (``"+"``, ``">="``...).

    Example:
        >>> BinaryExpr(Operation.GT, col("x"), lit(1))
        col('x') > 1
    """

    def __init__(self, op: Operation | str, left: Expr, right: Expr) -> None:
        self.op, self.left, self.right = _operator(op, "BinaryExpr"), left, right

    def _children(self) -> tuple[Expr, ...]:
        return (self.left, self.right)

    def to_pyarrow(self) -> Any:
        return _kernels()[self.op](self.left.to_pyarrow(), self.right.to_pyarrow())

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        return _kernels()[self.op](self.left._evaluate(table, ctx), self.right._evaluate(table, ctx))

    def __repr__(self) -> str:
        if self.op == "power":
            return f"{self.left!r}.power({self.right!r})"
        return f"{_wrap(self.left)} {self.op} {_wrap(self.right)}"


class UnaryExpr(Expr):
    """``op(operand)``; ``op`` is an ``Operation`` (``NOT``, ``IS_NULL``, ``IS_NOT_NULL``) or ember's name.

    Example:
        >>> UnaryExpr(Operation.IS_NULL, col("x"))
        is_null(col('x'))
    """

    def __init__(self, op: Operation | str, operand: Expr) -> None:
        self.op, self.operand = _operator(op, "UnaryExpr"), operand

    def _children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def to_pyarrow(self) -> Any:
        return _kernels()[self.op](self.operand.to_pyarrow())

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        return _kernels()[self.op](self.operand._evaluate(table, ctx))

    def __repr__(self) -> str:
        return f"~{_wrap(self.operand)}" if self.op == "~" else f"{self.op}({self.operand!r})"


class InExpr(Expr):
    def __init__(self, operand: Expr, values: list[Any], negate: bool) -> None:
        # `negated`, not `negate`: an instance attribute of that name hid Expr.negate()
        self.operand, self.values, self.negated = operand, values, negate

    def _children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def _apply(self, operand: Any) -> Any:
        import pyarrow as pa
        import pyarrow.compute as pc

        result = pc.is_in(operand, pa.array(self.values))
        return pc.invert(result) if self.negated else result

    def to_pyarrow(self) -> Any:
        return self._apply(self.operand.to_pyarrow())

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        return self._apply(self.operand._evaluate(table, ctx))

    def __repr__(self) -> str:
        return f"{'not_in' if self.negated else 'is_in'}({self.operand!r}, {self.values!r})"


class ComputeExpr(Expr):
    """A function of one expression's values with fixed further arguments: a ``pyarrow.compute``
    function by name (then it is also a pyarrow Expression), or ember's own function of arrays.
    The namespaces (``.str``, ``.list``, ``.struct``, ``.map``, ``.dt``, ``.arr``) and ``cast`` build it
    (Ray's ``PyArrowComputeUDFExpr``).

    Example:
        >>> ComputeExpr("utf8_upper", col("s"), label="str.upper").to_pyarrow()
        <pyarrow.compute.Expression utf8_upper(s)>
    """

    def __init__(
        self,
        function: Any,
        operand: Expr,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        label: str,
        shown: tuple[Any, ...] | None = None,
        on_pyarrow_expressions: bool = False,
    ) -> None:
        """``function``: a ``pyarrow.compute`` name, or a function of (values, *args, **kwargs) that
        also works on pyarrow Expressions when ``on_pyarrow_expressions``; ``label`` and ``shown``
        (the arguments shown, default ``args`` and ``kwargs``) make the repr."""
        self.function, self.operand, self.args, self.kwargs = (
            function,
            operand,
            tuple(args),
            dict(kwargs or {}),
        )
        self.label, self.shown = label, (self.args if shown is None else shown)
        self._pyarrow_convertible = isinstance(function, str) or on_pyarrow_expressions

    def _children(self) -> tuple[Expr, ...]:
        return (self.operand,)

    def _apply(self, values: Any) -> Any:
        if isinstance(self.function, str):
            import pyarrow.compute as pc

            return getattr(pc, self.function)(values, *self.args, **self.kwargs)
        return self.function(values, *self.args, **self.kwargs)

    def to_pyarrow(self) -> Any:
        if not self._pyarrow_convertible:
            return super().to_pyarrow()
        return self._apply(self.operand.to_pyarrow())

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        return self._apply(self.operand._evaluate(table, ctx))

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.shown]
        if self.shown is self.args:  # shown as called: the keyword arguments too
            parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{_wrap(self.operand)}.{self.label}({', '.join(parts)})"


def _cast(values: Any, arrow_type: Any, safe: bool) -> Any:
    """``values`` (an array, a scalar or a pyarrow Expression) cast to ``arrow_type``."""
    return values.cast(arrow_type, safe=safe)


class AliasExpr(Expr):
    def __init__(self, expr: Expr, name: str) -> None:
        self.expr, self.alias_name = expr, name

    def _children(self) -> tuple[Expr, ...]:
        return (self.expr,)

    @property
    def name(self) -> str:
        return self.alias_name

    def to_pyarrow(self) -> Any:
        return self.expr.to_pyarrow()

    def _evaluate(self, table: Block, ctx: Evaluation) -> Any:
        return self.expr._evaluate(table, ctx)

    def __repr__(self) -> str:
        return f"({self.expr!r}).alias({self.alias_name!r})"


def _wrap(expr: Expr) -> str:
    return f"({expr!r})" if isinstance(expr, (BinaryExpr, UnaryExpr)) else repr(expr)


def col(name: str) -> Expr:
    """The column ``name`` (Ray's ``ray.data.expressions.col``).

    Example:
        >>> import ember.data
        >>> from ember.data.expressions import col
        >>> ember.data.range(3).with_column("twice", col("id") * 2).take_all()
        [{'id': 0, 'twice': 0}, {'id': 1, 'twice': 2}, {'id': 2, 'twice': 4}]
    """
    if not isinstance(name, str):
        raise DataError(f"col() takes a column name (a str), not {type(name).__name__}")
    return ColumnExpr(name)


def lit(value: Any) -> Expr:
    """A constant value (Ray's ``ray.data.expressions.lit``).

    Example:
        >>> import ember.data
        >>> from ember.data.expressions import lit
        >>> ember.data.range(2).with_column("one", lit(1)).take_all()
        [{'id': 0, 'one': 1}, {'id': 1, 'one': 1}]
    """
    return LiteralExpr(value)


class Evaluation:
    """What one task's evaluation of an expression carries from block to block: the rows it has
    seen (``monotonically_increasing_id`` numbers rows within a task) and a task id drawn once.

    Example:
        >>> ctx = Evaluation()
        >>> ctx.rows_before, ctx.advance(3), ctx.rows_before
        (0, None, 3)
    """

    def __init__(self) -> None:
        self.rows_before = 0
        self._task_id: int | None = None

    def advance(self, rows: int) -> None:
        """Counts ``rows`` more rows as evaluated (called after each block)."""
        self.rows_before += rows

    @property
    def task_id(self) -> int:
        """A 30-bit id for this task, drawn from the OS's randomness on first use."""
        if self._task_id is None:
            import secrets

            self._task_id = secrets.randbits(30)  # below 2**30, as Ray's task ids: ids stay positive
        return self._task_id


def evaluate(expr: Expr, table: Block, ctx: Evaluation | None = None) -> Any:
    """The values of ``expr`` on ``table``: a pyarrow array (a literal is broadcast to the table's length).

    Example:
        >>> import pyarrow as pa
        >>> evaluate(col("a") + lit(1), pa.table({"a": [1, 2]})).to_pylist()
        [2, 3]
    """
    import pyarrow as pa

    try:
        values = expr._evaluate(table, ctx or Evaluation())
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
        first = str(e).strip().splitlines()[0]
        raise DataError(
            f"expression {expr!r} cannot be computed on columns {table.schema.names} ({first}); "
            "fix the expression's types (cast the column first)"
        ) from None
    if isinstance(values, pa.Scalar):
        values = pa.array([values.as_py()] * table.num_rows, type=values.type)
    return values


def walk(expr: Expr) -> Iterator[Expr]:
    """``expr`` and every expression inside it, parents first.

    Example:
        >>> [repr(e) for e in walk(col("a") + 1)]
        ["col('a') + 1", "col('a')", '1']
    """
    yield expr
    for child in expr._children():
        yield from walk(child)
