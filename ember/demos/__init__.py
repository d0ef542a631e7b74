"""Lightning's demo classes (`lightning.pytorch.demos`): the small models and random data its docs and examples
use, so `from lightning.pytorch.demos.boring_classes import BoringModel` ports as
`from ember.demos.boring_classes import BoringModel`.

Lightning's LSTM and Transformer demos (`LightningLSTM`, `SimpleLSTM`, `SequenceSampler`, `Transformer`,
`LightningTransformer`, `WikiText2`, which downloads its data) are not ported: asking for one says so in one line.

Example:
    >>> from ember.demos import BoringModel
    >>> BoringModel().layer
    Linear(in_features=32, out_features=2, bias=True)
"""

from typing import Any

from ember.demos.boring_classes import BoringDataModule, BoringModel, DemoModel

__all__ = ["BoringDataModule", "BoringModel", "DemoModel"]

_NOT_PORTED = ("LightningLSTM", "SequenceSampler", "SimpleLSTM", "LightningTransformer", "Transformer", "WikiText2")


def __getattr__(name: str) -> Any:
    if name in _NOT_PORTED:
        raise AttributeError(f"ember.demos has no {name} (Lightning's LSTM/Transformer demos are not ported); "
                             "use ember.demos.BoringModel or DemoModel, or write the model as an ember.Module")
    raise AttributeError(f"module 'ember.demos' has no attribute {name!r}")
