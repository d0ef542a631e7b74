"""``Expr.str``: string functions of an expression's values (Ray Data 2.60's string namespace).

Each method is one ``pyarrow.compute`` function (as in Ray), applied to the values with the
arguments given, so results are pyarrow's: ``len`` counts characters, ``find`` gives -1 when absent,
``split`` makes a list column. Extra positional and keyword arguments go to the pyarrow function
(``starts_with("a", ignore_case=True)``).

Example:
    >>> import pyarrow as pa
    >>> from ember.data.expressions import col, evaluate
    >>> evaluate(col("s").str.upper(), pa.table({"s": ["ab", "c"]})).to_pylist()
    ['AB', 'C']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Methods without arguments and the pyarrow.compute function each one is.
_UNARY = {
    "len": "utf8_length",
    "byte_len": "binary_length",
    "upper": "utf8_upper",
    "lower": "utf8_lower",
    "capitalize": "utf8_capitalize",
    "title": "utf8_title",
    "swapcase": "utf8_swapcase",
    "is_alpha": "utf8_is_alpha",
    "is_alnum": "utf8_is_alnum",
    "is_digit": "utf8_is_digit",
    "is_decimal": "utf8_is_decimal",
    "is_numeric": "utf8_is_numeric",
    "is_space": "utf8_is_space",
    "is_lower": "utf8_is_lower",
    "is_upper": "utf8_is_upper",
    "is_title": "utf8_is_title",
    "is_printable": "utf8_is_printable",
    "is_ascii": "string_is_ascii",
    "reverse": "utf8_reverse",
}

#: Methods that pass their arguments on, and the pyarrow.compute function each one is.
_WITH_ARGUMENTS = {
    "starts_with": "starts_with",
    "ends_with": "ends_with",
    "contains": "match_substring",
    "match": "match_like",
    "find": "find_substring",
    "count": "count_substring",
    "find_regex": "find_substring_regex",
    "count_regex": "count_substring_regex",
    "match_regex": "match_substring_regex",
    "slice": "utf8_slice_codeunits",
    "replace": "replace_substring",
    "replace_regex": "replace_substring_regex",
    "replace_slice": "binary_replace_slice",
    "split": "split_pattern",
    "split_regex": "split_pattern_regex",
    "split_whitespace": "utf8_split_whitespace",
    "extract": "extract_regex",
    "repeat": "binary_repeat",
}

#: ``strip``/``lstrip``/``rstrip``: (function when no characters are given, function for given characters).
_TRIM = {
    "strip": ("utf8_trim_whitespace", "utf8_trim"),
    "lstrip": ("utf8_ltrim_whitespace", "utf8_ltrim"),
    "rstrip": ("utf8_rtrim_whitespace", "utf8_rtrim"),
}

#: ``pad(side=...)``'s pyarrow function per side.
_PAD_SIDES = {"right": "utf8_rpad", "left": "utf8_lpad", "both": "utf8_center"}


class StringNamespace:
    """``expr.str``: ``len``, ``byte_len``, case functions (``upper``, ``lower``, ``capitalize``,
    ``title``, ``swapcase``), predicates (``is_alpha`` ... ``is_ascii``), search (``starts_with``,
    ``ends_with``, ``contains``, ``match``, ``find``, ``count`` and their ``_regex`` forms), edits
    (``reverse``, ``slice``, ``replace``, ``replace_regex``, ``replace_slice``, ``repeat``, ``extract``),
    splitting (``split``, ``split_regex``, ``split_whitespace``), padding (``center``, ``lpad``, ``rpad``,
    ``pad``) and trimming (``strip``, ``lstrip``, ``rstrip``).

    Example:
        >>> import pyarrow as pa
        >>> from ember.data.expressions import col, evaluate
        >>> t = pa.table({"s": [" a-b ", "c"]})
        >>> [evaluate(e, t).to_pylist() for e in (col("s").str.strip(), col("s").str.replace("-", "+"))]
        [['a-b', 'c'], [' a+b ', 'c']]
    """

    def __init__(self, expr: Any, make: Callable[..., Any]) -> None:
        self._expr, self._make = expr, make

    def _call(self, method: str, function: str, *args: Any, **kwargs: Any) -> Any:
        return self._make(function, self._expr, args, kwargs, label=f"str.{method}")

    def _trim(self, method: str, characters: str | None) -> Any:
        whitespace, given = _TRIM[method]
        if characters is None:
            return self._call(method, whitespace)
        return self._call(method, given, characters=characters)

    def strip(self, characters: str | None = None) -> Any:
        """Removes ``characters`` (whitespace when None) from both ends (``lstrip``/``rstrip``: one end).

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col, evaluate
            >>> evaluate(col("s").str.lstrip("x"), pa.table({"s": ["xxaxx"]})).to_pylist()
            ['axx']
        """
        return self._trim("strip", characters)

    def lstrip(self, characters: str | None = None) -> Any:
        """Removes ``characters`` (whitespace when None) from the start (see `strip`)."""
        return self._trim("lstrip", characters)

    def rstrip(self, characters: str | None = None) -> Any:
        """Removes ``characters`` (whitespace when None) from the end (see `strip`)."""
        return self._trim("rstrip", characters)

    def center(self, width: int, padding: str = " ", *args: Any, **kwargs: Any) -> Any:
        """Pads both sides to ``width`` characters (longer strings stay whole; ``lpad``/``rpad`` one side).

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col, evaluate
            >>> evaluate(col("s").str.lpad(3, "0"), pa.table({"s": ["7", "1234"]})).to_pylist()
            ['007', '1234']
        """
        return self._call("center", "utf8_center", width, padding, *args, **kwargs)

    def lpad(self, width: int, padding: str = " ", *args: Any, **kwargs: Any) -> Any:
        """Pads on the left to ``width`` characters (see `center`)."""
        return self._call("lpad", "utf8_lpad", width, padding, *args, **kwargs)

    def rpad(self, width: int, padding: str = " ", *args: Any, **kwargs: Any) -> Any:
        """Pads on the right to ``width`` characters (see `center`)."""
        return self._call("rpad", "utf8_rpad", width, padding, *args, **kwargs)

    def pad(self, width: int, fillchar: str = " ", side: str = "right") -> Any:
        """Pads to ``width`` with ``fillchar`` on ``side`` (``"left"``, ``"right"`` or ``"both"``).

        Example:
            >>> import pyarrow as pa
            >>> from ember.data.expressions import col, evaluate
            >>> evaluate(col("s").str.pad(3, "*", side="both"), pa.table({"s": ["a"]})).to_pylist()
            ['*a*']
        """
        if side not in _PAD_SIDES:
            raise ValueError(f"pad(side={side!r}): side is 'left', 'right' or 'both'")
        return self._call("pad", _PAD_SIDES[side], width=width, padding=fillchar)


def _unary_method(method: str, function: str) -> Callable[[StringNamespace], Any]:
    def call(self: StringNamespace) -> Any:
        return self._call(method, function)

    call.__name__, call.__qualname__ = method, f"StringNamespace.{method}"
    call.__doc__ = f"``pyarrow.compute.{function}`` of the values (Ray's ``Expr.str.{method}``)."
    return call


def _method_with_arguments(method: str, function: str) -> Callable[..., Any]:
    def call(self: StringNamespace, *args: Any, **kwargs: Any) -> Any:
        return self._call(method, function, *args, **kwargs)

    call.__name__, call.__qualname__ = method, f"StringNamespace.{method}"
    call.__doc__ = (
        f"``pyarrow.compute.{function}`` of the values with the arguments given (Ray's "
        f"``Expr.str.{method}``)."
    )
    return call


for _method, _function in _UNARY.items():
    setattr(StringNamespace, _method, _unary_method(_method, _function))
for _method, _function in _WITH_ARGUMENTS.items():
    setattr(StringNamespace, _method, _method_with_arguments(_method, _function))
