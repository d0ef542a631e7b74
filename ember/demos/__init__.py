"""Lightning's demo classes (`lightning.pytorch.demos`): the small models and random data its docs and
examples use, so `from lightning.pytorch.demos.boring_classes import BoringModel` ports as
`from ember.demos.boring_classes import BoringModel`.

Lightning's LSTM and Transformer demos (`LightningLSTM`, `SimpleLSTM`, `SequenceSampler`, `Transformer`,
`LightningTransformer`, `WikiText2`, which downloads its
data) are not ported: asking for one says so in one line.

Example:
    >>> from ember.demos import BoringModel
    >>> BoringModel().layer
    Linear(in_features=32, out_features=2, bias=True)
"""

from ember.demos.boring_classes import BoringDataModule, BoringModel, DemoModel
from ember.paths import refused_names

__all__ = ["BoringDataModule", "BoringModel", "DemoModel"]

# Lightning's LSTM/Transformer demos are not ported: they import as placeholders whose use raises one line
# naming ember.demos.BoringModel / DemoModel (docs/lightning_paths.md).
__getattr__ = refused_names(__name__)
