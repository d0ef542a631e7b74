"""The docstring examples of the Lightning callbacks added for issue 13 run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "ember.callbacks.timer",
    "ember.callbacks.finetuning",
    "ember.callbacks.on_exception_checkpoint",
    "ember.callbacks.model_summary",
    "ember.callbacks.early_stopping",
    "ember.callbacks.gradient_accumulation_scheduler",
    "ember.callbacks.stochastic_weight_avg",
    "ember.callbacks.rich_progress_bar",
]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that name relative folders write nothing outside the test's folder
    result = doctest.testmod(importlib.import_module(module_name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, f"{result.failed} examples failed in {module_name}"
