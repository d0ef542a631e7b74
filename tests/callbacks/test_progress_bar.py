"""TQDMProgressBar takes Lightning's arguments: refresh_rate (batches between refreshes, 0 = off),
process_position and leave."""

from __future__ import annotations

import io

import pytest
import torch

import ember
from ember.callbacks import TQDMProgressBar
from ember.errors import ConfigError


class Tiny(ember.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch).pow(2).mean()
        self.log("loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _fit(bar: TQDMProgressBar, tmp_path) -> list[str]:
    data = torch.utils.data.DataLoader(torch.randn(32, 4), batch_size=4)  # 8 batches
    trainer = ember.Trainer(
        max_epochs=1,
        default_root_dir=tmp_path,
        callbacks=[bar],
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
    )
    trainer.fit(Tiny(), data)
    return bar.stream.getvalue().splitlines()


def test_refresh_rate_counts_batches_between_refreshes(tmp_path):
    lines = _fit(TQDMProgressBar(refresh_rate=3, stream=io.StringIO()), tmp_path)
    batch_lines = [line for line in lines if " batch " in line]
    assert [line.split()[3] for line in batch_lines] == ["3/8", "6/8", "8/8"]  # every 3rd batch, and the last
    assert lines[-1].startswith("epoch 0 done: 8 batches") and "loss=" in lines[-1]


def test_refresh_rate_zero_turns_the_bar_off(tmp_path):
    bar = TQDMProgressBar(refresh_rate=0, stream=io.StringIO())
    assert bar.is_disabled and not bar.is_enabled
    assert _fit(bar, tmp_path) == []


def test_lightning_arguments_are_kept_and_bad_values_refused():
    bar = TQDMProgressBar(refresh_rate=2, process_position=1, leave=True)
    assert (bar.refresh_rate, bar.process_position) == (2, 1)
    bar.disable()
    assert bar.is_disabled
    bar.enable()
    assert bar.is_enabled
    for kwargs in ({"refresh_rate": -1}, {"refresh_rate": 1.5}, {"process_position": -2}):
        with pytest.raises(ConfigError, match="must be an int >= 0"):
            TQDMProgressBar(**kwargs)


def test_a_bar_written_against_lightnings_progress_bar_base_reads_the_same_values(tmp_path):
    """A custom bar uses Lightning's base-class surface: trainer,
    totals, descriptions, get_metrics (v_num included)."""
    pl = pytest.importorskip("lightning.pytorch")
    from lightning.pytorch.loggers import CSVLogger as LightningCSV

    import ember
    from ember.callbacks import ProgressBar
    from ember.loggers import CSVLogger

    def bar_class(base):
        class CountingBar(base):
            def __init__(self):
                super().__init__()
                self.seen = []

            def disable(self):
                pass

            def enable(self):
                pass

            def on_train_epoch_start(self, trainer, module):
                self.seen.append(
                    (
                        "epoch",
                        self.trainer is trainer,
                        self.train_description,
                        self.total_train_batches,
                        self.total_val_batches,
                    )
                )

            def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
                metrics = self.get_metrics(trainer, module)
                self.seen.append(("batch", batch_idx, sorted(metrics), metrics.get("v_num")))

        return CountingBar

    class Steps:
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(64, 10)

        def training_step(self, batch, batch_idx):
            loss = torch.nn.functional.cross_entropy(self.net(batch[0]), batch[1])
            self.log("loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch, batch_idx):
            self.log(
                "val_loss", torch.nn.functional.cross_entropy(self.net(batch[0]), batch[1]), prog_bar=True
            )

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    class Lit(Steps, pl.LightningModule):
        pass

    class Ours(Steps, ember.Module):
        pass

    x, y = torch.randn(96, 64), torch.randint(0, 10, (96,))
    data = torch.utils.data.TensorDataset(x, y)
    loaders = (
        torch.utils.data.DataLoader(data, batch_size=32),
        torch.utils.data.DataLoader(data, batch_size=48),
    )
    seen = {}
    for name, trainer_cls, module, base, logger in (
        ("ember", ember.Trainer, Ours(), ProgressBar, CSVLogger(tmp_path / "e")),
        ("lightning", pl.Trainer, Lit(), pl.callbacks.ProgressBar, LightningCSV(tmp_path / "l")),
    ):
        bar = bar_class(base)()
        trainer_cls(
            max_epochs=2,
            callbacks=[bar],
            logger=logger,
            enable_checkpointing=False,
            num_sanity_val_steps=0,
            enable_model_summary=False,
            default_root_dir=tmp_path / name,
        ).fit(module, *loaders)
        seen[name] = bar.seen
    assert seen["ember"] == seen["lightning"]
    assert seen["ember"][0] == ("epoch", True, "Training", 3, 2)
