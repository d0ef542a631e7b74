"""The zero-change runner: ``python -m ember script.py
[args]`` runs an unmodified Lightning / Ray script on ember.

    python -m ember train.py --max_epochs 3          # train.py imports lightning / ray.train: served by ember
    python -m ember -m my_package.train --lr 0.1     # a module, as `python -m`

An import hook installed in this process only (ember.runner.hook) serves ``lightning``,
``lightning.pytorch``, ``pytorch_lightning``, ``lightning.fabric`` (and every submodule, at ember's paths:
docs/lightning_paths.md), ``ray``'s session calls (ember.runner.ray_core), ``ray.data`` (ember.data) and
``ray.train`` (ember.train, ember.train.torch, ember.train.lightning) from ember. The real packages are
neither required nor modified; without the runner nothing changes. The runner sets ``EMBER_RUNNER=1`` in the
environment, so the processes the script starts see the same mapping: DDP workers re-run
``python -m ember script.py``, and ember's worker entry points call ``install_from_environment()``.
See docs/runner.md for what is mapped and what is refused.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ember.class_path import run_user_module, run_user_script
from ember.runner.hook import install, is_installed

__all__ = ["ENVIRONMENT_VARIABLE", "install", "install_from_environment", "is_installed", "main"]

#: set by the runner; the processes a script starts install the same hook when they see it.
ENVIRONMENT_VARIABLE = "EMBER_RUNNER"

USAGE = """usage: python -m ember script.py [args ...]
       python -m ember -m module [args ...]

Runs an unmodified script that imports lightning, lightning.pytorch, pytorch_lightning, lightning.fabric,
ray.data, ray.train, ray.train.torch or ray.train.lightning against ember (docs/runner.md).
For ember's own commands use `ember fit | validate | test | predict`."""


def install_from_environment() -> None:
    """Install the hook when the runner started this process's ancestor (``EMBER_RUNNER=1``)."""
    if os.environ.get(ENVIRONMENT_VARIABLE) == "1":
        install()


def main(argv: Sequence[str] | None = None) -> None:
    """Run a script (or ``-m module``) with the hook installed, as ``python script.py`` would run it."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        raise SystemExit(0 if args else 2)
    os.environ[ENVIRONMENT_VARIABLE] = "1"
    install()
    if args[0] == "-m":
        if len(args) < 2:
            _fail("-m needs a module name: python -m ember -m package.module [args]")
        sys.argv = [args[1], *args[2:]]
        sys.path.insert(0, os.getcwd())  # as `python -m module` puts the working directory first
        run_user_module(args[1])
        return
    script = Path(args[0])
    if not script.is_file():
        hint = (
            " (ember's commands run as `ember " + args[0] + " ...`)"
            if args[0] in ("fit", "validate", "test", "predict")
            else ""
        )
        _fail(f"no script {args[0]!r}: python -m ember runs a script, python -m ember script.py [args]{hint}")
    sys.argv = [str(script), *args[1:]]
    sys.path.insert(0, str(script.resolve().parent))  # as `python script.py` puts the script's folder first
    run_user_script(str(script))


def _fail(message: str) -> None:
    print(f"python -m ember: error: {message}", file=sys.stderr)
    raise SystemExit(2)
