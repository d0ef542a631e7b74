"""One place that imports transformers, so a missing package is one line naming the extra."""

from __future__ import annotations

from ember.errors import ConfigError

try:
    import transformers
except ImportError as exc:
    raise ConfigError(
        f"ember.train.huggingface.transformers needs transformers ({exc}); pip install 'ember[huggingface]'"
    ) from None

__all__ = ["transformers"]
