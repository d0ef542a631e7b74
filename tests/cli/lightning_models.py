"""The parity scenarios' models on Lightning 2.6 (see _source.py)."""

import lightning.pytorch as L  # noqa: F401 (the source's base classes)
from lightning.pytorch import cli as CLI  # noqa: F401 (the source uses CLI.OptimizerCallable)

from tests.cli._source import SOURCE

exec(compile(SOURCE, __file__, "exec"), globals())
