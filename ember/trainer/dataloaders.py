"""Where batches come from: resolving data arguments, limits, and resumable epoch iteration.

Resuming mid-epoch must give exactly the batches an uninterrupted run would have seen:
- a stateful iterable (ember.data iterators, torchdata's StatefulDataLoader) restores itself;
- a torch DataLoader is re-created under the RNG state captured at the epoch's start (so the
  shuffle permutation and worker seeds are the same) and fast-forwarded: without workers by
  advancing its sampler (no data is loaded), with workers by fetching and dropping batches
  (so worker-side random augmentations stay in step);
- any other iterable is re-iterated and fast-forwarded the same way.
"""

from __future__ import annotations

import itertools
import math
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from torch.utils.data import BatchSampler, DataLoader, IterableDataset, SequentialSampler

from ember.errors import ConfigError, DataError
from ember.runtime.combined_loader import CombinedLoader, flatten
from ember.runtime.seed import capture_rng_state, restore_rng_state, seed_dataloader_worker

#: Batch size used when a Trainer is handed an ember.data Dataset directly (Ray's default).
DEFAULT_DATASET_BATCH_SIZE = 256


def as_batch_iterable(data: Any, what: str) -> Any:
    """Accept a DataLoader, an ember.data Dataset, or any re-iterable of batches."""
    if data is None:
        return None
    if hasattr(data, "iter_torch_batches"):  # an ember.data (or ray.data) Dataset
        return data.iter_torch_batches(batch_size=DEFAULT_DATASET_BATCH_SIZE)
    if isinstance(data, (str, bytes, os.PathLike)):
        raise ConfigError(
            f"{what} is the path {os.fsdecode(data)!r}, which would be iterated character by character; read "
            "it first, e.g. ember.data.read_parquet(path), and pass the Dataset (or a DataLoader)"
        )
    if isinstance(data, Iterator):
        raise ConfigError(
            f"{what} is a one-shot iterator ({type(data).__name__}); pass a DataLoader, a Dataset or a list "
            "of batches so that every epoch can iterate it again"
        )
    if not isinstance(data, Iterable):
        raise ConfigError(
            f"{what} is a {type(data).__name__}; pass a DataLoader, an ember.data Dataset or an iterable"
        )
    return data


def _is_loader(value: Any) -> bool:
    """A leaf of a collection of loaders: something that gives batches (not a batch itself)."""
    return isinstance(value, (DataLoader, CombinedLoader)) or hasattr(value, "iter_torch_batches")


def is_collection_of_loaders(data: Any) -> bool:
    """A dict of loaders (always: iterating a dict gives its keys) or a list/tuple (nested) of loaders, which
    Lightning reads through a CombinedLoader; a list of tensors stays a list of batches.

    Example:
        >>> loader = DataLoader(range(4), batch_size=2)
        >>> is_collection_of_loaders({"a": loader}), is_collection_of_loaders([loader, [loader]])
        (True, True)
        >>> is_collection_of_loaders([[1.0, 2.0], [3.0]])
        False
    """
    if isinstance(data, Mapping):
        return True
    if not isinstance(data, (list, tuple)) or not data:
        return False
    leaves, _ = flatten(data)
    return all(_is_loader(leaf) for leaf in leaves)


class CombinedBatches:
    """fit's training data given as several loaders: Lightning's ``CombinedLoader(mode="max_size_cycle")`` (or
    the CombinedLoader given), yielding only the combined batch (training_step takes ``batch, batch_idx``).

    Example:
        >>> loaders = [DataLoader(range(4), batch_size=2), DataLoader(range(2))]
        >>> combined = CombinedLoader(loaders, "max_size_cycle")
        >>> [[b.tolist() for b in batch] for batch in CombinedBatches(combined)]
        [[[0, 1], [0]], [[2, 3], [1]]]
    """

    def __init__(self, combined: CombinedLoader) -> None:
        self.combined = combined

    def __iter__(self) -> Iterator[Any]:
        batches = (batch for batch, _, _ in self.combined)
        total = length_of(self.combined)
        # no draw past the epoch's length (Lightning's fetcher stops there too): one more would start the
        # shorter loaders again, drawing a new shuffle from the RNG streams
        return batches if total is None else itertools.islice(batches, total)

    def __len__(self) -> int:
        return len(self.combined)

    def set_epoch(self, epoch: int) -> None:
        for loader in self.combined.flattened:
            set_loader_epoch(loader, epoch)


def combined_train_data(data: Any, prepare: Any, limit: int | float | None) -> CombinedBatches:
    """A dict/list of training loaders, or a CombinedLoader, as fit's data; ``prepare`` readies each loader
    (the strategy's shard), ``limit`` (limit_train_batches) applies to each, as Lightning's. Lightning refuses
    the ``sequential`` mode in fit.

    Example:
        >>> data = combined_train_data({"a": DataLoader(range(6), batch_size=2), "b": DataLoader(range(2))},
        ...                            prepare=lambda loader: loader, limit=2)
        >>> len(data), [{k: v.tolist() for k, v in batch.items()} for batch in data]
        (2, [{'a': [0, 1], 'b': [0]}, {'a': [2, 3], 'b': [1]}])
    """
    combined = data if isinstance(data, CombinedLoader) else CombinedLoader(data, "max_size_cycle")
    if combined.mode == "sequential":
        raise ConfigError(
            'fit does not support CombinedLoader(mode="sequential") for training; use one of '
            "'max_size_cycle', 'max_size' or 'min_size'"
        )
    for i, leaf in enumerate(combined.flattened):
        if not (_is_loader(leaf) or (isinstance(leaf, Iterable) and not isinstance(leaf, (str, bytes)))):
            raise ConfigError(
                f"train_dataloaders[{i}] (of {len(combined.flattened)} combined) is a "
                f"{type(leaf).__name__}; pass a DataLoader, an ember.data Dataset or an iterable"
            )
    combined.flattened = [
        prepare_loader(prepare(as_batch_iterable(leaf, f"train_dataloaders[{i}]")))
        for i, leaf in enumerate(combined.flattened)
    ]
    combined.limits = [
        resolve_limit(limit, length_of(leaf), "limit_train_batches") for leaf in combined.flattened
    ]
    return CombinedBatches(combined)


def collection_shape(data: Any) -> Any:
    """The shape of validate/test/predict data given as a collection of loaders (`unflatten` puts the prepared
    loaders back in it); None for one loader or a combined (non-sequential) CombinedLoader.

    Example:
        >>> from ember.runtime.combined_loader import unflatten
        >>> unflatten(["P", "Q"], collection_shape({"p": DataLoader(range(2)), "q": DataLoader(range(3))}))
        {'p': 'P', 'q': 'Q'}
    """
    if isinstance(data, CombinedLoader):
        return flatten(data.iterables)[1] if data.mode == "sequential" else None
    return flatten(data)[1] if is_collection_of_loaders(data) else None


def as_loader_list(data: Any, what: str) -> list[Any]:
    """Validation/test/predict data: one loader or several (a list, a dict, nested, or a sequential
    CombinedLoader: Lightning's sequential mode, each loader its own dataloader_idx); a CombinedLoader in
    another mode is one loader of combined batches.

    Example:
        >>> loaders = as_loader_list({"p": DataLoader(range(2)), "q": [DataLoader(range(3))]}, "dataloaders")
        >>> [len(loader) for loader in loaders]
        [2, 3]
    """
    if data is None:
        return []
    if isinstance(data, CombinedLoader):
        if data.mode != "sequential":
            return [CombinedBatches(data)]
        data = data.flattened
    if is_collection_of_loaders(data):
        leaves, _ = flatten(data)
        return [as_batch_iterable(d, f"{what}[{i}]") for i, d in enumerate(leaves)]
    return [as_batch_iterable(data, what)]


def without_shuffle(loader: Any, what: str) -> Any:
    """`overfit_batches`: the same first batches every epoch, so a shuffling DataLoader is rebuilt with a
    SequentialSampler (Lightning warns and does the same); other loaders are returned as they are."""
    if (
        not isinstance(loader, DataLoader)
        or isinstance(loader.sampler, SequentialSampler)
        or isinstance(loader.dataset, IterableDataset)
        or type(loader.batch_sampler) is not BatchSampler
    ):
        return loader
    warnings.warn(
        f"You requested to overfit but enabled {what} dataloader shuffling; ember turns it off", stacklevel=3
    )
    return DataLoader(
        loader.dataset,
        batch_size=loader.batch_size,
        # map-style (an IterableDataset returned above): torch types Dataset without __len__
        sampler=SequentialSampler(loader.dataset),  # type: ignore[arg-type]
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        drop_last=loader.drop_last,
        timeout=loader.timeout,
        worker_init_fn=loader.worker_init_fn,
        multiprocessing_context=loader.multiprocessing_context,
        generator=loader.generator,
        prefetch_factor=loader.prefetch_factor if loader.num_workers else None,
        persistent_workers=loader.persistent_workers,
    )


def prepare_loader(loader: Any) -> Any:
    """Give DataLoader workers distinct, reproducible numpy/python seeds (torch seeds only torch)."""
    if (
        isinstance(loader, DataLoader)
        and loader.num_workers > 0
        and loader.worker_init_fn is None
        and os.environ.get("EMBER_SEED_WORKERS") == "1"
    ):
        loader.worker_init_fn = seed_dataloader_worker
    return loader


def is_stateful(loader: Any) -> bool:
    return callable(getattr(loader, "state_dict", None)) and callable(
        getattr(loader, "load_state_dict", None)
    )


def explain_step_error(error: ValueError, batch: Any, step: str) -> DataError | None:
    """A DataError with a hint when a step unpacked a dict batch as `x, y` (Python says only "too many
    values to unpack"); None for any other error."""
    text = str(error)
    if not (text.startswith("too many values to unpack") or text.startswith("not enough values to unpack")):
        return None
    if not isinstance(batch, Mapping):
        return None
    keys = list(batch)
    return DataError(
        f"{step} could not unpack the batch ({text}): the batch is a dict with keys {keys[:8]}, not a tuple; "
        f"index it by name, e.g. x, y = batch[{str(keys[0]) if keys else 'x'!r}], "
        f"batch[{str(keys[-1]) if keys else 'y'!r}]"
    )


def length_of(loader: Any) -> int | None:
    try:
        return len(loader)
    except TypeError:
        return None


def train_epoch_batches(limit: int | float | None, loader: Any) -> float:
    """The batches of a training epoch under ``limit_train_batches``: several loaders apply it each
    (Lightning's per-loader limits, already in their combined length), one loader to itself.

    Example:
        >>> train_epoch_batches(0.5, [1, 2, 3, 4, 5])
        2.0
    """
    if isinstance(loader, CombinedBatches):
        length = length_of(loader)
        return float(length) if length is not None else math.inf
    return resolve_limit(limit, length_of(loader), "limit_train_batches")


def resolve_limit(limit: int | float | None, length: int | None, what: str) -> float:
    """How many batches to use: None = all, int = that many, float = fraction of the length."""
    total = float(length) if length is not None else math.inf
    if limit is None:
        return total
    if isinstance(limit, bool) or limit < 0:
        raise ConfigError(f"{what}={limit!r} must be a non-negative int or a float in [0, 1]")
    if isinstance(limit, float):
        if limit > 1.0:
            raise ConfigError(f"{what}={limit} is a float above 1; pass an int for a batch count")
        if length is None:
            if limit == 1.0:
                return total
            raise ConfigError(f"{what}={limit} is a fraction but the data has no length; pass an int")
        return float(int(length * limit)) if limit < 1.0 else total
    return min(float(limit), total)


def set_loader_epoch(loader: Any, epoch: int) -> None:
    """Tell a loader's sampler and batch sampler (or the loader itself) the epoch: a DistributedSampler
    shuffles by it.

    Example:
        >>> from torch.utils.data.distributed import DistributedSampler
        >>> sampler = DistributedSampler(range(4), num_replicas=1, rank=0)
        >>> set_loader_epoch(DataLoader(range(4), sampler=sampler), 3)
        >>> sampler.epoch
        3
    """
    sampler = getattr(loader, "sampler", None)
    for target in (sampler, getattr(loader, "batch_sampler", None)):
        if (
            target is not None
            and not isinstance(target, DataLoader)
            and callable(getattr(target, "set_epoch", None))
        ):
            target.set_epoch(epoch)
    if not isinstance(loader, DataLoader) and callable(getattr(loader, "set_epoch", None)):
        loader.set_epoch(epoch)


class EpochIterator:
    """Iterates one loader epoch after epoch, able to resume mid-epoch exactly."""

    def __init__(self, loader: Any) -> None:
        self.loader = prepare_loader(loader)
        self.stateful = is_stateful(self.loader)
        self.epoch_start_rng: dict[str, Any] | None = None

    def set_epoch(self, epoch: int) -> None:
        set_loader_epoch(self.loader, epoch)

    def start(self, skip: int, epoch_start_rng: dict[str, Any] | None) -> Iterator[Any]:
        """An iterator over this epoch's batches, after `skip` batches already consumed before a resume."""
        if self.stateful:
            return iter(self.loader)
        if skip and epoch_start_rng is not None:
            restore_rng_state(epoch_start_rng)
        self.epoch_start_rng = epoch_start_rng if skip else capture_rng_state()
        iterator = iter(self.loader)
        if skip:
            fast_forward(iterator, self.loader, skip)
        return iterator


def fast_forward(iterator: Iterator[Any], loader: Any, count: int) -> None:
    """Skip `count` batches, without loading them when the loader allows it."""
    sampler_iter = getattr(iterator, "_sampler_iter", None)
    single_process = isinstance(loader, DataLoader) and loader.num_workers == 0
    if single_process and sampler_iter is not None and not isinstance(loader.dataset, IterableDataset):
        for _ in itertools.islice(sampler_iter, count):
            pass
        iterator._num_yielded += count  # type: ignore[attr-defined]
        return
    for _ in itertools.islice(iterator, count):
        pass
