"""OnExceptionCheckpoint: save a checkpoint when fit fails (Lightning's ``OnExceptionCheckpoint``)."""

from __future__ import annotations

import os
from typing import Any

from ember.callbacks.checkpoint import Checkpoint
from ember.errors import ConfigError


class OnExceptionCheckpoint(Checkpoint):
    """When training raises, write ``<dirpath>/<filename>.ckpt`` (overwriting an earlier one) so the run
    can resume with ``fit(ckpt_path=callback.ckpt_path)``; a run that ends without an exception removes it.

    Example:
        >>> from ember import Trainer
        >>> from ember.callbacks import OnExceptionCheckpoint
        >>> callback = OnExceptionCheckpoint("runs/crash")
        >>> callback.ckpt_path
        'runs/crash/on_exception.ckpt'
        >>> # enable_checkpointing=False refuses it (Lightning)
        >>> trainer = Trainer(callbacks=[callback], logger=False)
    """

    FILE_EXTENSION = ".ckpt"

    def __init__(self, dirpath: str | os.PathLike[str], filename: str = "on_exception") -> None:
        if not filename:
            raise ConfigError(
                "OnExceptionCheckpoint(filename='') has no name to save under; pass a file name "
                "without the extension, e.g. filename='on_exception'"
            )
        self.dirpath = dirpath
        self.filename = filename
        self._failed = False

    @property
    def ckpt_path(self) -> str:
        return os.path.join(self.dirpath, self.filename + self.FILE_EXTENSION)

    def on_exception(self, trainer: Any, module: Any, exception: BaseException) -> None:
        self._failed = True
        trainer.save_checkpoint(self.ckpt_path)

    def teardown(self, trainer: Any, module: Any, stage: str) -> None:
        # Lightning removes the file when a run ends normally (its teardown hook only runs then).
        if self._failed:
            self._failed = False
            return
        if trainer.is_global_zero and os.path.isfile(self.ckpt_path):
            from ember.fs import remove_file

            remove_file(self.ckpt_path)
