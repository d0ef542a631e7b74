"""Lightning's `lightning.pytorch.utilities.imports` at ember's path: whether optional packages are installed
(docs/lightning_paths.md). Each flag asks the installed package's metadata; nothing is imported.

Example:
    >>> isinstance(_TORCHVISION_AVAILABLE, bool)
    True
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

from ember.paths import refused_names


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _version_at_least(distribution: str, minimum: tuple[int, ...]) -> bool:
    try:
        text = importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    numbers = []
    for part in text.split("+")[0].split(".")[: len(minimum)]:
        digits = "".join(c for c in part if c.isdigit())
        numbers.append(int(digits or 0))
    return tuple(numbers) >= minimum


_TORCHVISION_AVAILABLE = _installed("torchvision")
_OMEGACONF_AVAILABLE = _installed("omegaconf")
_RICH_AVAILABLE = _installed("rich")
_TORCH_GREATER_EQUAL_2_1 = _version_at_least("torch", (2, 1))
_TORCHMETRICS_GREATER_EQUAL_1_0_0 = _version_at_least("torchmetrics", (1, 0, 0))

__getattr__ = refused_names(__name__)
