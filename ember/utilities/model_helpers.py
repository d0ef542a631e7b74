"""Lightning's `lightning.pytorch.utilities.model_helpers` at ember's path (docs/lightning_paths.md).

Every other public name of Lightning's module imports as
a placeholder that refuses use, naming the alternative.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ConfigError
from ember.paths import refused_names

__all__ = ["get_torchvision_model"]


def get_torchvision_model(model_name: str, **kwargs: Any) -> Any:
    """torchvision's model ``model_name`` built with ``kwargs``
    (``torchvision.models.get_model``), as Lightning's.

    Example:
        >>> get_torchvision_model("resnet18", weights=None).fc.out_features  # doctest: +SKIP
        1000
    """
    try:
        from torchvision import models
    except ImportError:
        raise ConfigError(
            f"get_torchvision_model({model_name!r}) needs torchvision: pip install torchvision"
        ) from None
    return models.get_model(model_name, **kwargs)


__getattr__ = refused_names(__name__)
