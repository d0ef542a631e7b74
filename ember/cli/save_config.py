"""SaveConfigCallback: the run's full config, as `config.yaml` in `trainer.log_dir` (Lightning's class).

As Lightning 2.6: a `config.yaml` already there stops the run before it trains (a RuntimeError, so a
earlier run's results are never mixed with a new config) unless `overwrite=True`; `save_config`
is the hook a subclass overrides to save the config somewhere else as well (rank 0 only), and
`save_to_log_dir=False` only makes sense with such a subclass. Only global rank 0 writes; the write is atomic.

The `ember fit` command keeps its runs' history instead (`VersionedSaveConfigCallback`): a resumed
fit or a validate/test run writes `config-1.yaml`, `config-2.yaml`, ... beside the first, and an
identical file is left as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ember.callbacks import Callback
from ember.cli.dump import dump_config
from ember.errors import ConfigError
from ember.fs import atomic_write, make_folders


class ConfigExistsError(ConfigError, RuntimeError):
    """A config.yaml is already in the run folder (a RuntimeError, as Lightning raises)."""


class SaveConfigCallback(Callback):
    """Writes the parsed config into `trainer.log_dir` at setup.

    Example:
        >>> LightningCLI(MyModel, save_config_kwargs={"overwrite": True})   # doctest: +SKIP
    """

    def __init__(
        self,
        parser: Any,
        config: Any,
        config_filename: str = "config.yaml",
        overwrite: bool = False,
        multifile: bool = False,
        save_to_log_dir: bool = True,
    ) -> None:
        if multifile:
            raise ConfigError("SaveConfigCallback(multifile=True) is not supported by ember; save one file")
        if not save_to_log_dir and type(self).save_config is SaveConfigCallback.save_config:
            raise ConfigError(
                "`save_to_log_dir=False` only makes sense when subclassing SaveConfigCallback to "
                "implement `save_config`; pass save_config_callback=None to save nothing"
            )
        self.parser, self.config = parser, config
        self.config_filename, self.overwrite = config_filename, overwrite
        self.multifile, self.save_to_log_dir = multifile, save_to_log_dir
        self.already_saved = False

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        if self.already_saved:
            return
        if self.save_to_log_dir and trainer.is_global_zero:
            self._write(Path(trainer.log_dir) / self.config_filename, stage)
        if trainer.is_global_zero:
            self.save_config(trainer, pl_module, stage)
            self.already_saved = True

    def save_config(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Override to save the config somewhere else too (called on global rank 0 only).

        Example:
            >>> class LogConfig(SaveConfigCallback):
            ...     def save_config(self, trainer, pl_module, stage):
            ...         trainer.logger.log_hyperparams({"config": self.parser.dump(self.config)})
        """

    def _write(self, target: Path, stage: str) -> None:
        if target.exists() and not self.overwrite:
            raise ConfigExistsError(
                f"{type(self).__name__} expected {target} to NOT exist. Aborting to avoid overwriting "
                "results of a previous run: delete it, pass LightningCLI(save_config_callback=None), or "
                "LightningCLI(save_config_kwargs={'overwrite': True})"
            )
        _write_text(target, dump_config(self.parser, self.config))


class VersionedSaveConfigCallback(SaveConfigCallback):
    """The `ember fit` command's: an existing, different config.yaml is kept and the new one written beside it
    (`config-1.yaml`, ...) for a resumed fit or a validate/test/predict run; a new fit still refuses."""

    def _write(self, target: Path, stage: str) -> None:
        text = dump_config(self.parser, self.config)
        if target.exists() and target.read_text(encoding="utf-8", errors="replace") != text:
            resumed = getattr(self.config, "ckpt_path", None) is not None
            if stage == "fit" and not resumed and not self.overwrite:
                raise ConfigExistsError(
                    f"{target} exists and holds another run's config; delete it, choose another "
                    "trainer.default_root_dir, or pass save_config_kwargs={'overwrite': True}"
                )
            if not self.overwrite:
                target = _next_free(target)
        _write_text(target, text)


def _write_text(target: Path, text: str) -> None:
    make_folders(target.parent)
    with atomic_write(target, "w") as f:
        f.write(text)


def _next_free(target: Path) -> Path:
    n = 1
    while (candidate := target.with_name(f"{target.stem}-{n}{target.suffix}")).exists():
        n += 1
    return candidate
