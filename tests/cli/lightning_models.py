"""The parity scenarios' models on Lightning 2.6 (see _source.py)."""

import lightning.pytorch as L

from tests.cli._source import SOURCE

exec(compile(SOURCE, __file__, "exec"), globals())
