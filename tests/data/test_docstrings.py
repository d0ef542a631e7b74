"""Every docstring example in ember.data runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import ember.data

MODULES = ["ember.data"] + sorted(
    name for _, name, _ in pkgutil.walk_packages(ember.data.__path__, "ember.data.")
)


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name):
    module = importlib.import_module(module_name)
    result = doctest.testmod(
        module, extraglobs={"ember": ember}, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0, f"{result.failed} docstring examples failed in {module_name}"
