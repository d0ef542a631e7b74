"""String expressions (``Dataset.filter(expr="id <= 4")``): Ray Data 2.60's grammar, parsed into ember
expressions.

Ray reads the string as a Python expression and accepts: one comparison per term (``== != < <= > >=``,
``in`` / ``not in`` a list of constants), ``and`` / ``or`` / ``not``, a leading ``-`` (times -1), column
names (``a``, and ``a.b`` for a nested name), constants, and the calls ``is_null(x)``,
``is_valid(x)`` / ``is_not_null(x)``, ``is_nan(x)`` (``x != x``) and ``is_in(x, [...])``. Anything else
is a ValueError, as in Ray. (Ray marks string expressions deprecated in favour of ``col(...)``.)

Example:
    >>> parse_expression("id <= 4 and not name in ['a', 'b']")
    (col('id') <= 4) & (~is_in(col('name'), ['a', 'b']))
"""

from __future__ import annotations

import ast
from typing import Any

from ember.data.expressions.core import BinaryExpr, ColumnExpr, Expr, LiteralExpr, UnaryExpr, col, lit
from ember.data.ray_errors import DataValueError

_COMPARISONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def parse_expression(text: str) -> Expr:
    """The ember expression that Ray's string expression ``text`` stands for (ValueError if it has none).

    Example:
        >>> parse_expression("is_null(x) or -x > 3")
        (is_null(col('x'))) | ((col('x') * -1) > 3)
        >>> parse_expression("x ** 2")
        Traceback (most recent call last):
        ...
        ember.data.ray_errors.DataValueError: filter(expr='x ** 2'): Ray's string expressions have no BinOp;
        write ember.data.expressions.col(...) expressions instead
    """
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise DataValueError(f"Invalid syntax in the expression: {text}") from None
    return _Converter(text).expression(tree.body)


class _Converter(ast.NodeVisitor):
    def __init__(self, text: str) -> None:
        self.text = text

    def expression(self, node: ast.AST) -> Expr:
        """``node`` as an expression (``visit``, typed)."""
        expr: Expr = self.visit(node)
        return expr

    def generic_visit(self, node: ast.AST) -> Any:
        raise self._unsupported(type(node).__name__)

    def _unsupported(self, what: str) -> DataValueError:
        return DataValueError(
            f"filter(expr={self.text!r}): Ray's string expressions have no {what}; write "
            "ember.data.expressions.col(...) expressions instead"
        )

    def visit_Compare(self, node: ast.Compare) -> Expr:
        if len(node.ops) != 1:
            raise DataValueError("Only simple binary comparisons are supported")
        left, op, right = self.expression(node.left), node.ops[0], node.comparators[0]
        if isinstance(op, (ast.In, ast.NotIn)):
            values = self._constant_list(right)
            return left.not_in(values) if isinstance(op, ast.NotIn) else left.is_in(values)
        if type(op) not in _COMPARISONS:
            raise self._unsupported(f"comparison {type(op).__name__}")
        return BinaryExpr(_COMPARISONS[type(op)], left, self.expression(right))

    def visit_BoolOp(self, node: ast.BoolOp) -> Expr:
        terms = [self.expression(value) for value in node.values]
        combined = terms[0]
        for term in terms[1:]:
            combined = BinaryExpr("&" if isinstance(node.op, ast.And) else "|", combined, term)
        return combined

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Expr:
        if isinstance(node.op, ast.Not):
            return UnaryExpr("~", self.expression(node.operand))
        if isinstance(node.op, ast.USub):
            return self.expression(node.operand) * lit(-1)
        raise self._unsupported(f"unary operator {type(node.op).__name__}")

    def visit_Name(self, node: ast.Name) -> Expr:
        return col(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> Expr:
        inner = self.expression(node.value)
        if not isinstance(inner, ColumnExpr):
            raise self._unsupported(f"attribute access .{node.attr}")
        return col(f"{inner.name}.{node.attr}")

    def visit_Constant(self, node: ast.Constant) -> Expr:
        return lit(node.value)

    def visit_List(self, node: ast.List) -> Expr:
        return lit(self._constant_list(node))

    def _constant_list(self, node: ast.AST) -> list[Any]:
        elements = [self.expression(element) for element in node.elts] if isinstance(node, ast.List) else None
        literals = [e for e in elements or [] if isinstance(e, LiteralExpr)]
        if elements is None or len(literals) != len(elements):
            raise DataValueError(
                "List contains non-constant expressions. Ray Data expressions currently only "
                "support lists of constant values."
            )
        return [e.value for e in literals]

    def visit_Call(self, node: ast.Call) -> Expr:
        name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
        arity = 2 if name == "is_in" else 1
        if name not in ("is_null", "is_valid", "is_not_null", "is_nan", "is_in"):
            raise DataValueError(f"Unsupported function: {name}")
        if len(node.args) != arity:
            raise DataValueError(
                f"{name}() expects exactly {'two arguments' if arity == 2 else 'one argument'}"
            )
        operand = self.expression(node.args[0])
        if name == "is_null":
            return operand.is_null()
        if name in ("is_valid", "is_not_null"):
            return operand.is_not_null()
        if name == "is_nan":
            return BinaryExpr("!=", operand, operand)  # NaN != NaN (Ray's rule)
        return operand.is_in(self._constant_list(node.args[1]))
