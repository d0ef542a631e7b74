"""prepare_trainer: let a `transformers.Trainer` train on ember.data shards (Ray's function)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from torch.utils.data import DataLoader, IterableDataset

from ember.errors import ConfigError
from ember.train.huggingface.transformers._require import transformers


class _BatchesAsDataset(IterableDataset):
    """Batches already made by `iter_torch_batches`, handed through a DataLoader one at a time."""

    def __init__(self, batches: Iterable[Any]) -> None:
        super().__init__()
        self.batches = batches

    def __iter__(self) -> Iterator[Any]:
        return iter(self.batches)


def _first(items: list[Any]) -> Any:
    return items[0]


def _batches_loader(batches: Iterable[Any]) -> DataLoader:
    return DataLoader(_BatchesAsDataset(batches), batch_size=1, collate_fn=_first)


def _is_ember_batches(data: Any) -> bool:
    from ember.data import BatchIterable

    return isinstance(data, BatchIterable)


def prepare_trainer(trainer: Any) -> Any:
    """Return `trainer`, able to use `iter_torch_batches(...)` of an ember.data shard as its train or eval
    dataset (the batches are used as made: batch size, shuffling and collation are the iterator's).
    Other datasets keep the Trainer's own data loaders.

    Example (inside train_loop_per_worker):
        >>> shard = ember.train.get_dataset_shard("train")  # doctest: +SKIP
        >>> trainer = transformers.Trainer(model=model, args=args,  # doctest: +SKIP
        ...                                train_dataset=shard.iter_torch_batches(batch_size=16))
        >>> trainer = prepare_trainer(trainer)  # doctest: +SKIP
    """
    if not isinstance(trainer, transformers.Trainer):
        raise ConfigError(f"prepare_trainer needs a transformers.Trainer; got {type(trainer).__name__}")
    base = type(trainer)

    class EmberTransformersTrainer(base):  # type: ignore[valid-type, misc]
        """The user's Trainer class, reading ember.data batch iterators as they are."""

        def get_train_dataloader(self) -> DataLoader:
            if _is_ember_batches(self.train_dataset):
                return _batches_loader(self.train_dataset)
            return super().get_train_dataloader()

        def get_eval_dataloader(self, eval_dataset: Any = None) -> DataLoader:
            chosen = self.eval_dataset if eval_dataset is None else eval_dataset
            if isinstance(chosen, str) and isinstance(self.eval_dataset, dict):
                chosen = self.eval_dataset[chosen]
            if _is_ember_batches(chosen):
                return _batches_loader(chosen)
            return super().get_eval_dataloader(eval_dataset)

    EmberTransformersTrainer.__name__ = EmberTransformersTrainer.__qualname__ = f"Ember{base.__name__}"
    trainer.__class__ = EmberTransformersTrainer
    return trainer
