"""TensorBoardLogger: event files in the run folder (needs the `tensorboard` package).

On an object store (``save_dir="s3://..."``, ``memory://``...) the event files are written to a local
staging folder and uploaded whole, each as one object, at every flush and at the end of the run.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from ember.errors import ConfigError
from ember.fs import RemotePath, atomic_write, is_url, local_path, storage_path
from ember.loggers.base import Logger
from ember.loggers.logger import rank_zero_experiment, rank_zero_only


def tensorboard_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("tensorboard") is not None


def flatten_params(params: Mapping[str, Any], delimiter: str = "/") -> dict[str, Any]:
    """Nested mappings become `outer/inner` keys, as Lightning flattens hyperparameters for loggers.

    Example:
        >>> flatten_params({"optim": {"lr": 0.1, "betas": [0.9, 0.99]}, "hidden": 32})
        {'optim/lr': 0.1, 'optim/betas': [0.9, 0.99], 'hidden': 32}
    """
    out: dict[str, Any] = {}
    for key, value in params.items():
        if isinstance(value, Mapping) and value:
            for inner, v in flatten_params(value, delimiter).items():
                out[f"{key}{delimiter}{inner}"] = v
        else:
            out[str(key)] = value
    return out


def hparam_value(value: Any) -> bool | int | float | str:
    """What TensorBoard's HParams plugin can show: numbers, booleans and strings; anything else as text.

    Example:
        >>> [hparam_value(v) for v in (0.1, 3, True, None, [1, 2])]
        [0.1, 3, True, 'None', '[1, 2]']
    """
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()  # a 0-d tensor or numpy scalar
    return value if isinstance(value, (bool, int, float, str)) else str(value)


class TensorBoardLogger(Logger):
    """Scalars and hyperparameters as TensorBoard event files; view with `tensorboard --logdir <root>`.

    Hyperparameters go to the HParams tab together with the metrics they are judged by (Lightning's
    behaviour): `log_hyperparams(params, metrics)` records both; without `metrics`, a placeholder
    `hp_metric` of -1 is logged when `default_hp_metric=True` (log `self.log("hp_metric", value)` in
    your module to fill it), and nothing at all when `default_hp_metric=False`. `prefix` is put in
    front of every metric name, joined with `-`. The writer (and TensorBoard itself) is imported on
    first use, not at `import ember`.

    Example:
        >>> from ember.loggers import TensorBoardLogger
        >>> logger = TensorBoardLogger(save_dir="runs", name="mnist", default_hp_metric=False)
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(
        self,
        save_dir: str | os.PathLike[str] | RemotePath = ".",
        name: str | None = "lightning_logs",
        version: int | str | None = None,
        log_graph: bool = False,
        default_hp_metric: bool = True,
        prefix: str = "",
        sub_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__(save_dir, name, version)
        self._log_graph = log_graph
        self._hparams: dict[
            str, Any
        ] = {}  # all logged so far: hparams.yaml (Lightning's file) at the first save
        self._hparams_file_written = False
        self._default_hp_metric = default_hp_metric
        self._prefix = prefix
        # Lightning's sub_dir: a folder inside the version folder for the event files ($VARS and ~ expanded)
        self._sub_dir = (
            os.path.expandvars(os.path.expanduser(os.fspath(sub_dir))) if sub_dir is not None else None
        )
        self._writer: Any = None
        self._staging: str | None = None

    @property
    def log_dir(self) -> str:
        """The version folder, and `sub_dir` inside it when given (Lightning's).

        Example:
            >>> TensorBoardLogger("runs", name="tb", version=3, sub_dir="train").log_dir
            'runs/tb/version_3/train'
        """
        folder = super().log_dir
        assert folder is not None  # save_dir is required here, so the version folder always exists
        return str(storage_path(folder) / self._sub_dir) if self._sub_dir else folder

    @property
    # the SummaryWriter (and its run folder) exists on global rank zero only (Lightning's)
    @rank_zero_experiment
    def experiment(self) -> Any:
        if self._writer is None:
            if not tensorboard_available():
                raise ConfigError(
                    "TensorBoardLogger needs the tensorboard package; pip install 'ember[tensorboard]'"
                )
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir=self._local_dir())
        return self._writer

    def _local_dir(self) -> str:
        """Where the event files are written: the log folder itself, or for an object store (s3://,
        memory://, ...) a local staging folder whose files `save` uploads whole (TensorBoard's writer
        appends to an open file, which object stores cannot do)."""
        if not is_url(self.log_dir):
            from ember.fs import refuse_linked_folders

            # SummaryWriter writes by itself: its folder (and those up to save_dir) must not be planted links
            refuse_linked_folders(local_path(self.log_dir), self.save_dir)
            return local_path(self.log_dir)
        if self._staging is None:
            from ember.fs import make_temporary_folder

            self._staging = str(make_temporary_folder("tensorboard-"))
        return self._staging

    def _upload(self) -> None:
        if self._staging is None:
            return
        for file in sorted(Path(self._staging).rglob("*")):
            if file.is_file():
                with atomic_write(
                    storage_path(self.log_dir) / file.relative_to(self._staging).as_posix()
                ) as out:
                    out.write(file.read_bytes())

    @rank_zero_only
    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        for name, value in metrics.items():  # "epoch" too: Lightning's TensorBoard files have an epoch curve
            key = f"{self._prefix}{self.LOGGER_JOIN_CHAR}{name}" if self._prefix else name
            self.experiment.add_scalar(key, value, step)

    @rank_zero_only
    def log_hyperparams(
        self, params: dict[str, Any], metrics: dict[str, float] | float | None = None, step: int | None = None
    ) -> None:
        """Record `params` in the HParams tab, judged by `metrics` (a dict, or one value named `hp_metric`).

        Example:
            >>> import tempfile
            >>> logger = TensorBoardLogger(tempfile.mkdtemp())
            >>> logger.log_hyperparams({"lr": 0.1, "optim": {"name": "sgd"}}, {"val_acc": 0.0})
            >>> logger.finalize("success")
        """
        from torch.utils.tensorboard.summary import hparams

        from ember.checkpoint import to_safe

        self._hparams.update(params)
        if metrics is None:
            metrics = {"hp_metric": -1} if self._default_hp_metric else None
        elif not isinstance(metrics, Mapping):
            metrics = {"hp_metric": metrics}
        if not metrics:
            return  # Lightning writes nothing to TensorBoard without a metric to judge the parameters by
        self.log_metrics(dict(metrics), step)
        flat = {k: hparam_value(v) for k, v in flatten_params(to_safe(dict(params))).items()}
        writer = self.experiment._get_file_writer()  # torch's own add_hparams would start a second run folder
        for summary in hparams(flat, dict(metrics)):
            writer.add_summary(summary, step)

    @rank_zero_only
    def log_graph(self, model: Any, input_array: Any = None) -> None:
        """With `log_graph=True`: the model's graph, traced on `input_array` (default: the module's
        `example_input_array`), to TensorBoard's Graphs tab; the Trainer calls it at the start of every stage.

        Example:
            >>> import tempfile, torch
            >>> logger = TensorBoardLogger(tempfile.mkdtemp(), log_graph=True)
            >>> logger.log_graph(torch.nn.Linear(2, 1), torch.zeros(1, 2))
            >>> logger.finalize("success")
        """
        if not self._log_graph:
            return
        if input_array is None:
            input_array = getattr(model, "example_input_array", None)
        if input_array is None or not isinstance(input_array, (torch.Tensor, tuple)):
            warnings.warn(
                "Could not log computational graph to TensorBoard: set the module's `example_input_array` "
                "to a tensor or a tuple of tensors, or pass input_array to log_graph",
                stacklevel=2,
            )
            return
        from ember.runtime.devices import move_to_device

        device = next(iter(model.parameters()), torch.empty(0)).device
        self.experiment.add_graph(model, move_to_device(input_array, device))  # traced where the model is

    @rank_zero_only
    def save(self) -> None:
        """Flush the event file (the run folder exists from the first save, as in Lightning) and, the first
        time, write the hyperparameters logged so far to `hparams.yaml` beside it (`{}` when none)."""
        self.experiment.flush()
        if not self._hparams_file_written:
            self._write_hparams_file()
        self._upload()

    def _write_hparams_file(self) -> None:
        import yaml

        from ember.checkpoint import to_safe

        folder = Path(self._local_dir())
        if not (
            folder / "hparams.yaml"
        ).exists():  # Lightning leaves an existing file (a resumed run's) alone
            safe = {
                k: (v.tolist() if hasattr(v, "tolist") else v)
                for k, v in to_safe(dict(self._hparams)).items()
            }
            with atomic_write(folder / "hparams.yaml", "w") as f:
                f.write(yaml.safe_dump(safe))
        self._hparams_file_written = True

    @rank_zero_only
    def finalize(self, status: str) -> None:
        if self._writer is not None:
            self._writer.flush()
            self._writer.close()
            self._writer = None
            self._upload()
            if self._staging is not None:  # uploaded: the local copy is no longer needed
                from ember.fs import remove_temporary_folder

                remove_temporary_folder(self._staging)
                self._staging = None
