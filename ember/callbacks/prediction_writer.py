"""Writing predictions as `Trainer.predict` produces them, instead of keeping them all in memory.

`BasePredictionWriter` is Lightning's callback of the same name: subclass it and implement
`write_on_batch_end` and/or `write_on_epoch_end`. `PredictionWriter` is a ready one that saves
CPU copies of the outputs with `torch.save`, atomically, in files that `torch.load(...,
weights_only=True)` opens.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.errors import ConfigError
from ember.fs import RemotePath

_INTERVALS = ("batch", "epoch", "batch_and_epoch")


def to_cpu(value: Any) -> Any:
    """A copy of a (nested) prediction with every tensor detached and on the CPU."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu")
    if isinstance(value, dict):
        return {k: to_cpu(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_cpu(v) for v in value)
    return value


def _rows_in(batch: Any) -> int:
    if isinstance(batch, torch.Tensor):
        return len(batch)
    if isinstance(batch, dict) and batch:
        return _rows_in(next(iter(batch.values())))
    if isinstance(batch, (list, tuple)) and batch:
        return _rows_in(batch[0])
    return 1


def _refuse_shuffling(loaders: Any) -> None:
    """Lightning's batch_indices are the indices its sampler drew; ember's count rows in the order they come,
    which are those indices only when the loader does not shuffle."""
    from torch.utils.data import RandomSampler

    for loader in loaders if isinstance(loaders, (list, tuple)) else [loaders]:
        if isinstance(getattr(loader, "sampler", None), RandomSampler):
            raise ConfigError(
                "BasePredictionWriter with a shuffling predict DataLoader: its batch_indices would not "
                "be the sampler's indices (Lightning's); pass shuffle=False to the predict DataLoader"
            )


class BasePredictionWriter(Callback):
    """Write predictions during `trainer.predict` (Lightning's `BasePredictionWriter`).

    ``write_interval``: "batch" calls `write_on_batch_end` after every batch; "epoch" calls
    `write_on_epoch_end` once with every batch's predictions; "batch_and_epoch" does both.
    ``batch_indices`` are the positions of the batch's rows in the prediction data (row i of the data is
    index i); a shuffling predict DataLoader is refused, as those would not be its sampler's indices.
    ``write_on_epoch_end`` gets the predictions (a list per dataloader when there are several) and the batch
    indices (a list per dataloader, also for one: Lightning's shapes).

    Example:
        >>> import torch, ember
        >>> class Collect(ember.callbacks.BasePredictionWriter):
        ...     def write_on_batch_end(
        ...         self, trainer, module, prediction, batch_indices, batch, batch_idx, dataloader_idx
        ...     ):
        ...         print(batch_idx, batch_indices, prediction.shape)
        >>> model = ember.Module(); model.forward = lambda x: x * 2
        >>> trainer = ember.Trainer(callbacks=[Collect()], logger=False, enable_progress_bar=False,
        ...                         enable_model_summary=False, enable_checkpointing=False)
        >>> trainer.predict(model, [torch.ones(2, 3), torch.ones(1, 3)], return_predictions=False)
        0 [0, 1] torch.Size([2, 3])
        1 [2] torch.Size([1, 3])
    """

    def __init__(self, write_interval: str = "batch") -> None:
        if write_interval not in _INTERVALS:
            raise ConfigError(f"write_interval={write_interval!r}; use one of {', '.join(_INTERVALS)}")
        self.write_interval = write_interval
        self._predictions: list[list[Any]] = []
        self._indices: list[list[list[int]]] = []
        self._seen: dict[int, int] = {}

    @property
    def on_batch(self) -> bool:
        return self.write_interval in ("batch", "batch_and_epoch")

    @property
    def on_epoch(self) -> bool:
        return self.write_interval in ("epoch", "batch_and_epoch")

    def write_on_batch_end(
        self,
        trainer: Any,
        module: Any,
        prediction: Any,
        batch_indices: list[int] | None,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int,
    ) -> None:
        """Called after each predict batch when ``write_interval`` includes "batch"."""
        raise NotImplementedError(
            f"{type(self).__name__} uses write_interval='batch'; define write_on_batch_end"
        )

    def write_on_epoch_end(
        self, trainer: Any, module: Any, predictions: list[Any], batch_indices: list[Any]
    ) -> None:
        """Called once at the end with all predictions (a list per dataloader when there are several) and
        ``batch_indices`` as a list per dataloader, one loader or several (Lightning's shapes)."""
        raise NotImplementedError(
            f"{type(self).__name__} uses write_interval='epoch'; define write_on_epoch_end"
        )

    def on_predict_epoch_start(self, trainer: Any, module: Any) -> None:
        _refuse_shuffling(trainer.predict_dataloaders)
        self._predictions, self._indices, self._seen = [], [], {}

    def on_predict_batch_end(
        self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        start = self._seen.get(dataloader_idx, 0)
        indices = list(range(start, start + _rows_in(batch)))
        self._seen[dataloader_idx] = indices[-1] + 1 if indices else start
        if self.on_batch:
            self.write_on_batch_end(trainer, module, outputs, indices, batch, batch_idx, dataloader_idx)
        if self.on_epoch:
            while len(self._predictions) <= dataloader_idx:
                self._predictions.append([])
                self._indices.append([])
            self._predictions[dataloader_idx].append(outputs)
            self._indices[dataloader_idx].append(indices)

    def on_predict_epoch_end(self, trainer: Any, module: Any) -> None:
        if not self.on_epoch:
            return
        self.num_loaders = max(1, len(self._predictions))
        single = self.num_loaders == 1
        predictions = (self._predictions[0] if self._predictions else []) if single else self._predictions
        # Lightning unwraps the predictions of a single loader but never the batch indices
        self.write_on_epoch_end(trainer, module, predictions, self._indices)
        self._predictions, self._indices = [], []


class PredictionWriter(BasePredictionWriter):
    """Save predictions (moved to the CPU) under ``output_dir`` with `torch.save`, atomically.

    "batch": ``predictions-<loader>-<batch>.pt`` per batch; "epoch": ``predictions-<loader>.pt`` holding every
    batch. Each file is ``{"predictions": ..., "batch_indices": ...}`` and opens with ``torch.load(path,
    weights_only=True)``. On several processes each rank predicts its share of the data, so by default
    (``all_ranks=None``) every rank writes its own files, named ``...-rank<N>.pt`` past rank 0, and no
    prediction is lost; ``all_ranks=False`` keeps rank 0's
    share only (when every rank predicts the same data).

    Example:
        >>> writer = PredictionWriter("predictions/", write_interval="epoch")   # doctest: +SKIP
        >>> trainer = ember.Trainer(callbacks=[writer])                          # doctest: +SKIP
        >>> trainer.predict(model, dataset, return_predictions=False)            # doctest: +SKIP
    """

    def __init__(
        self, output_dir: str | os.PathLike[str], write_interval: str = "batch", all_ranks: bool | None = None
    ) -> None:
        super().__init__(write_interval)
        self.output_dir, self.all_ranks = Path(output_dir), all_ranks
        self.written: list[Path | RemotePath] = []

    def _save(self, trainer: Any, name: str, payload: dict[str, Any]) -> None:
        from ember.checkpoint import save_checkpoint

        rank = getattr(trainer, "global_rank", 0)
        every_rank = self.all_ranks if self.all_ranks is not None else getattr(trainer, "world_size", 1) > 1
        if rank and not every_rank:
            return
        if every_rank and rank:  # named per rank: one writer per file
            name = name.replace(".pt", f"-rank{rank}.pt")
        self.written.append(save_checkpoint(payload, self.output_dir / name))

    def write_on_batch_end(
        self,
        trainer: Any,
        module: Any,
        prediction: Any,
        batch_indices: list[int] | None,
        batch: Any,
        batch_idx: int,
        dataloader_idx: int,
    ) -> None:
        self._save(
            trainer,
            f"predictions-{dataloader_idx}-{batch_idx:06d}.pt",
            {"predictions": to_cpu(prediction), "batch_indices": list(batch_indices or [])},
        )

    def write_on_epoch_end(
        self, trainer: Any, module: Any, predictions: list[Any], batch_indices: list[Any]
    ) -> None:
        several = getattr(self, "num_loaders", 1) > 1
        loaders = predictions if several else [predictions]
        for i, (outputs, rows) in enumerate(zip(loaders, batch_indices, strict=True)):
            self._save(
                trainer, f"predictions-{i}.pt", {"predictions": to_cpu(outputs), "batch_indices": rows}
            )


from ember.paths import refused_names  # noqa: E402 - Lightning's other names refuse use (docs/lightning_paths.md)

__getattr__ = refused_names(__name__)
