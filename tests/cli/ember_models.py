"""The parity scenarios' models on ember (see _source.py)."""

import ember as L  # noqa: F401 (the source's base classes)
from ember import cli as CLI  # noqa: F401 (the source uses CLI.OptimizerCallable)
from tests.cli._source import SOURCE

exec(compile(SOURCE, __file__, "exec"), globals())
