"""SaveConfigCallback: the run's full config, as `config.yaml` in its run folder (Lightning's name and arguments).

A different `config.yaml` already there is never overwritten unasked: a new fit refuses in one line
(as Lightning does), `overwrite=True` replaces it; a resumed fit (`ckpt_path` given) or a
validate/test/predict run writes `config-1.yaml`, `config-2.yaml`, ... beside it instead. An
identical file is left as it is. Only global rank 0 writes; the write is atomic.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ember.callbacks import Callback
from ember.cli.dump import dump_config
from ember.errors import ConfigError
from ember.fs import atomic_write


class SaveConfigCallback(Callback):
    """Writes the parsed config into `trainer.log_dir` at setup.

    Example:
        >>> LightningCLI(MyModel, save_config_kwargs={"overwrite": True})   # doctest: +SKIP
    """

    def __init__(self, parser: Any, config: Any, config_filename: str = "config.yaml", overwrite: bool = False,
                 multifile: bool = False, save_to_log_dir: bool = True) -> None:
        if multifile:
            raise ConfigError("SaveConfigCallback(multifile=True) is not supported by ember; save one file")
        if not save_to_log_dir:
            raise ConfigError("SaveConfigCallback(save_to_log_dir=False): ember saves into the run folder only; "
                              "pass save_config_callback=None to save nothing")
        self.parser, self.config = parser, config
        self.config_filename, self.overwrite = config_filename, overwrite
        self.already_saved = False

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if self.already_saved or not trainer.is_global_zero:
            return
        text = dump_config(self.parser, self.config)
        folder = Path(trainer.log_dir)
        target = folder / self.config_filename
        if target.exists() and target.read_text(encoding="utf-8", errors="replace") != text:
            resumed = getattr(self.config, "ckpt_path", None) is not None
            if stage == "fit" and not resumed and not self.overwrite:
                raise ConfigError(f"{target} exists and holds another run's config; delete it, choose another "
                                  "trainer.default_root_dir, or pass save_config_kwargs={'overwrite': True}")
            if not self.overwrite:
                target = _next_free(target)
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_write(target, "w") as f:
            f.write(text)
        self.already_saved = True


def _next_free(target: Path) -> Path:
    n = 1
    while (candidate := target.with_name(f"{target.stem}-{n}{target.suffix}")).exists():
        n += 1
    return candidate
