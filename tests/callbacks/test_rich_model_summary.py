"""RichModelSummary draws what Lightning 2.6's draws: the
same rich table and totals, character for character."""

from __future__ import annotations

import sys

import pytest
import torch
from _twin import fit, lightning, make_module

from ember.callbacks import RichModelSummary
from ember.errors import ConfigError

rich = pytest.importorskip("rich", reason="rich is the optional 'rich' extra")


def _drawn(library: str, tmp_path, **summary) -> str:
    callbacks = lightning().callbacks if library == "lightning" else sys.modules["ember.callbacks"]
    module = make_module(library, example_input_array=torch.zeros(4, 64))
    console = rich.get_console()
    with console.capture() as captured:
        fit(library, tmp_path / library, [callbacks.RichModelSummary(**summary)], module=module, max_epochs=1)
    return captured.get()


@pytest.mark.parametrize("summary", [{}, {"max_depth": -1, "header_style": "bold blue"}, {"max_depth": 0}])
def test_same_drawing_as_lightning(tmp_path, summary):
    theirs, ours = _drawn("lightning", tmp_path, **summary), _drawn("ember", tmp_path, **summary)
    assert ours == theirs
    if summary.get("max_depth", 1):
        assert "Sequential" in ours and "Total FLOPs" in ours and "[4, 64]" in ours
    else:
        assert ours == ""


def test_refusals(monkeypatch):
    with pytest.raises(ConfigError, match="header_style only"):
        RichModelSummary(title="layers")
    with pytest.raises(ConfigError, match="max_depth"):
        RichModelSummary(max_depth=-2)
    monkeypatch.setitem(sys.modules, "rich.table", None)  # rich not installed
    with pytest.raises(ConfigError, match="needs the rich package"):
        RichModelSummary()
