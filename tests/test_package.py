"""`ember.<part>` works after a bare `import ember` for every package of ember, as
`lightning.pytorch.profilers` or `lightning.pytorch.tuner` do after
`import lightning.pytorch` (the parts load lazily, on first touch)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ember"


def test_every_package_of_ember_is_an_attribute_after_a_bare_import():
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    assert {"profilers", "tuner", "data", "callbacks"} <= set(packages)
    probe = "import ember, sys; missing = [n for n in sys.argv[1:] if not hasattr(ember, n)]; print(missing)"
    out = subprocess.run(
        [sys.executable, "-c", probe, *packages],
        capture_output=True,
        text=True,
        check=True,
        cwd=PACKAGE.parent,
    )
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_the_utilities_examples_run():
    import doctest

    import ember.utilities

    result = doctest.testmod(ember.utilities, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 5 and result.failed == 0
