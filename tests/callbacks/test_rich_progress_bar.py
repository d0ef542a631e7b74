"""RichProgressBar: Lightning's arguments, a bar per epoch
with the metrics, and a one-line refusal without rich."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _twin import fit, lightning

from ember.callbacks import RichProgressBar, RichProgressBarTheme
from ember.errors import EmberError

ROOT = Path(__file__).parents[2]


def test_draws_each_epoch_with_its_metrics(tmp_path):
    out = io.StringIO()
    bar = RichProgressBar(
        refresh_rate=1000,
        leave=True,
        console_kwargs={"file": out, "force_terminal": True, "width": 160, "color_system": None},
    )
    fit("ember", tmp_path, [bar], max_epochs=2, enable_progress_bar=True)
    text = out.getvalue()
    assert "Epoch 0" in text and "Epoch 1" in text
    assert "8/8" in text and "it/s" in text
    assert bar.progress is None  # stopped at the end of training


def test_same_arguments_and_switches_as_lightning():
    pl = lightning()
    theirs = pl.callbacks.RichProgressBar(refresh_rate=5, leave=True, console_kwargs={"width": 80})
    ours = RichProgressBar(refresh_rate=5, leave=True, console_kwargs={"width": 80})
    for bar in (theirs, ours):
        bar.disable()
    assert (
        (ours.refresh_rate, ours.is_enabled, ours.is_disabled)
        == (theirs.refresh_rate, theirs.is_enabled, theirs.is_disabled)
        == (5, False, True)
    )
    assert (
        RichProgressBar(refresh_rate=0).is_disabled
        == pl.callbacks.RichProgressBar(refresh_rate=0).is_disabled
    )
    their_theme = pl.callbacks.progress.rich_progress.RichProgressBarTheme()
    assert vars(RichProgressBarTheme()) == vars(their_theme)  # same fields, same default styles
    with pytest.raises(EmberError, match="refresh_rate"):
        RichProgressBar(refresh_rate=-1)


def test_refused_in_one_line_without_rich(tmp_path):
    """rich absent (a None entry in sys.modules makes its import fail): the constructor names the extra."""
    code = (
        "import sys; sys.modules['rich'] = None\n"
        "from ember.callbacks import RichProgressBar\n"
        "RichProgressBar()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "ember.errors.ConfigError: RichProgressBar needs the rich package: pip install 'ember[rich]', "
        "or use TQDMProgressBar"
    )
