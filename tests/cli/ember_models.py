"""The parity scenarios' models on ember (see _source.py)."""

import ember as L

from tests.cli._source import SOURCE

exec(compile(SOURCE, __file__, "exec"), globals())
