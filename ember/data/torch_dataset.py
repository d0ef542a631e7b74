"""Dataset.to_torch(): a torch IterableDataset over a BatchIterable."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from ember.data.iterate import BatchIterable


class TorchIterableDataset(torch.utils.data.IterableDataset):
    """Yields (features, label) when ``label_column`` is set, else dict batches.

    Example:
        >>> import ember.data
        >>> tds = ember.data.range(3).to_torch(batch_size=3)
        >>> next(iter(tds))["id"].tolist()
        [0, 1, 2]
    """

    def __init__(
        self, batches: BatchIterable, label_column: str | None, feature_columns: list[str] | None
    ) -> None:
        self.batches, self.label_column, self.feature_columns = batches, label_column, feature_columns

    def __iter__(self) -> Iterator[Any]:
        for batch in self.batches:
            if self.label_column is None:
                yield batch
                continue
            label = batch.pop(self.label_column)
            names = self.feature_columns or list(batch)
            features = torch.stack([batch[n].reshape(len(label), -1).squeeze(-1) for n in names], dim=1)
            yield features, label

    def state_dict(self) -> dict[str, Any]:
        """The underlying iterator's position (see BatchIterable.state_dict)."""
        return self.batches.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume where ``state`` was taken."""
        self.batches.load_state_dict(state)
