"""Checkpoint file names from a template, by Lightning 2.6's rules
(``ModelCheckpoint._format_checkpoint_name``).

A template names values in braces, with an optional format spec: ``"{epoch}-{val_loss:.2f}"``. Each name
becomes ``name=value`` (or just the value without `auto_insert_metric_name`); a name that was not logged
reads as 0; names may hold ``/`` or ``.`` (``{val/acc}``), which ``str.format`` would otherwise refuse.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch

#: The template when none is given: ``{epoch}<join>{step}``.
DEFAULT_PARTS = ("{epoch}", "{step}")

# "{name" up to the first ":" or "}" (Lightning's pattern: the same names, so the same strings).
_NAME_OPENING = re.compile(r"(\{.*?)[:\}]")


def format_template(
    template: str | None,
    metrics: Mapping[str, Any],
    *,
    join_char: str = "-",
    equals_char: str = "=",
    auto_insert_metric_name: bool = True,
    prefix: str | None = None,
) -> str:
    """Fill `template` with `metrics` (tensors or numbers), without the file extension.

    Example:
        >>> import torch
        >>> format_template(
        ...     "{epoch}-{val_loss:.2f}", {"epoch": torch.tensor(3), "val_loss": torch.tensor(0.1234)}
        ... )
        'epoch=3-val_loss=0.12'
        >>> format_template(
        ...     "e{epoch:02d}_{val/acc:.1f}", {"epoch": 4, "val/acc": 0.5}, auto_insert_metric_name=False
        ... )
        'e04_0.5'
        >>> format_template(None, {"epoch": 1, "step": 20})
        'epoch=1-step=20'
        >>> format_template("{missing}", {})
        'missing=0'
    """
    text = template or join_char.join(DEFAULT_PARTS)
    values = dict(metrics)
    # Longest names first, so "{epoch" is not replaced inside "{epoch_test" (text.replace is by substring).
    for opening in sorted(_NAME_OPENING.findall(text), key=len, reverse=True):
        name = opening[1:]
        if auto_insert_metric_name:
            text = text.replace(opening, name + equals_char + "{" + name)
        # "{0[name]" indexes the mapping, so any name works (dots and slashes included).
        text = text.replace(opening, "{0[" + name + "]")
        values.setdefault(name, torch.tensor(0))
    text = text.format(values)
    return join_char.join([prefix, text]) if prefix is not None else text
