"""The models of the CLI parity scenarios, written once for `L` (lightning.pytorch or ember).

`tests/cli/lightning_models.py` and `tests/cli/ember_models.py` run this source with their own `L`, so the
classes have the same names and code and differ only in their base classes (as a user's port would).
"""

SOURCE = '''
import torch
from torch.utils.data import DataLoader, TensorDataset


def _dataset(n, seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=generator)
    return TensorDataset(x, (x[:, :4].sum(1) > 0).long())


class DemoModel(L.LightningModule):
    """A two-layer classifier (the docs' DemoModel, on 8 features)."""

    def __init__(self, hidden: int = 16, learning_rate: float = 0.1, out_dim: int = 2):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(8, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, out_dim)
        )

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.cross_entropy(self(x), y))

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_acc", (self(x).argmax(1) == y).float().mean())

    def predict_step(self, batch, batch_idx):
        return self(batch[0]).argmax(1)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.learning_rate)


class OtherModel(DemoModel):
    """A DemoModel with a wider default hidden layer (a second subclass for --model=...)."""

    def __init__(self, hidden: int = 32, learning_rate: float = 0.05, dropout: float = 0.0):
        super().__init__(hidden=hidden, learning_rate=learning_rate)


class NoOptimModel(DemoModel):
    """A DemoModel without configure_optimizers: the CLI's --optimizer gives it one."""

    configure_optimizers = L.LightningModule.configure_optimizers


class DemoData(L.LightningDataModule):
    """64 train rows, 32 validation/test/predict rows of 8 features."""

    def __init__(self, batch_size: int = 16, num_rows: int = 64):
        super().__init__()
        self.batch_size, self.num_rows = batch_size, num_rows

    def setup(self, stage):
        self.train_set, self.val_set = _dataset(self.num_rows, 0), _dataset(32, 1)

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=self.batch_size)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)

    def test_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)

    def predict_dataloader(self):
        return DataLoader(self.val_set, batch_size=self.batch_size)


class BigData(DemoData):
    """DemoData with a larger default batch (a second subclass for --data=...)."""

    def __init__(self, batch_size: int = 32, num_rows: int = 64):
        super().__init__(batch_size=batch_size, num_rows=num_rows)


class ModelWithEncoder(L.LightningModule):
    """A model whose layer size comes from the data (the docs' link_arguments example)."""

    def __init__(self, num_classes: int = 2, hidden: int = 8):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Linear(8, num_classes)

    def training_step(self, batch, batch_idx):
        return torch.nn.functional.cross_entropy(self.net(batch[0]), batch[1])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class DataWithClasses(DemoData):
    """DemoData that knows its number of classes (read by a link applied on instantiate)."""

    def __init__(self, batch_size: int = 16, num_rows: int = 64):
        super().__init__(batch_size=batch_size, num_rows=num_rows)
        self.num_classes = 2


class InjectedModel(DemoModel):
    """The optimizer given as a callable (the docs' dependency injection with OptimizerCallable)."""

    def __init__(self, optimizer: CLI.OptimizerCallable = torch.optim.SGD, hidden: int = 16):
        super().__init__(hidden=hidden)
        self.optimizer = optimizer

    def configure_optimizers(self):
        return self.optimizer(self.parameters())


class TwoOptimizerModel(DemoModel):
    """Two optimizers' class_path + init_args, linked in by the CLI (the docs' multiple-optimizers
    example)."""

    def __init__(self, optimizer1_init: dict = None, optimizer2_init: dict = None):
        super().__init__()
        self.optimizer1_init, self.optimizer2_init = optimizer1_init, optimizer2_init

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)
'''
