"""Tuner.lr_find and LearningRateFinder, run beside the real Lightning 2.6 on the same model and data."""

from __future__ import annotations

import doctest
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import ember
import ember.callbacks.lr_finder
from ember.errors import ConfigError
from ember.tuner import LearningRateFinder, LRFinder, Tuner

pl = pytest.importorskip("lightning.pytorch")


def digits() -> DataLoader:
    from sklearn.datasets import load_digits

    data = load_digits()
    x, y = torch.tensor(data.data[:640], dtype=torch.float32) / 16, torch.tensor(data.target[:640])
    return DataLoader(TensorDataset(x, y), batch_size=32)  # 20 batches, the same order every epoch


def body(base):
    class Classifier(base):
        def __init__(self, lr: float = 0.5) -> None:
            super().__init__()
            self.save_hyperparameters()
            self.net = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))

        def training_step(self, batch, batch_idx):
            x, y = batch
            return F.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
            return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, 1, 0.5)]

    return Classifier


EmberClassifier, LightningClassifier = body(ember.Module), body(pl.LightningModule)


def quiet(library, **options):
    return library.Trainer(
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        **options,
    )


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The same search under both libraries, from the same initial weights."""
    torch.manual_seed(0)
    lightning_model = LightningClassifier()
    ember_model = EmberClassifier()
    ember_model.load_state_dict(lightning_model.state_dict())
    initial = {k: v.clone() for k, v in ember_model.state_dict().items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lightning_finder = pl.tuner.Tuner(quiet(pl, default_root_dir=tmp_path_factory.mktemp("pl"))).lr_find(
            lightning_model, digits(), min_lr=1e-4, max_lr=10, num_training=50
        )
    trainer = quiet(ember, default_root_dir=tmp_path_factory.mktemp("ember"))
    rng = torch.get_rng_state()
    ember_finder = Tuner(trainer).lr_find(ember_model, digits(), min_lr=1e-4, max_lr=10, num_training=50)
    return {
        "pl": lightning_finder,
        "ember": ember_finder,
        "model": ember_model,
        "lightning_model": lightning_model,
        "initial": initial,
        "rng_kept": torch.equal(rng, torch.get_rng_state()),
        "trainer": trainer,
    }


def test_the_curve_and_suggestion_are_lightnings(both):
    ours, theirs = both["ember"], both["pl"]
    assert isinstance(ours, LRFinder)
    assert ours.results["lr"] == theirs.results["lr"]  # the same schedule, bit for bit
    assert len(ours.results["loss"]) == len(theirs.results["loss"])
    # The same SGD steps on the same batches: equal up to float summation order inside the two loops.
    assert torch.allclose(torch.tensor(ours.results["loss"]), torch.tensor(theirs.results["loss"]), rtol=1e-5)
    assert ours.suggestion() == theirs.suggestion()
    assert ours.suggestion(skip_begin=5, skip_end=3) == theirs.suggestion(skip_begin=5, skip_end=3)


def test_the_model_gets_the_suggestion_and_keeps_its_weights(both):
    model = both["model"]
    assert model.hparams.lr == both["ember"].suggestion() == both["lightning_model"].hparams.lr
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, both["initial"][name]), name
    assert both["rng_kept"]  # Lightning isolates the RNG streams during the search too
    assert both["trainer"].global_step == 0  # the user's Trainer did not train


def test_the_search_stops_when_the_loss_diverges(both):
    assert len(both["ember"].results["lr"]) < 50  # max_lr=10 blows the loss up before the 50th step
    assert len(both["ember"].results["lr"]) == len(both["pl"].results["lr"])


def test_linear_mode_and_attr_name(tmp_path):
    class Named(EmberClassifier):
        def __init__(self) -> None:
            super().__init__()
            self.my_rate = 0.1

    model = Named()
    finder = Tuner(quiet(ember, default_root_dir=tmp_path)).lr_find(
        model, digits(), mode="linear", min_lr=0.01, max_lr=0.1, num_training=15, attr_name="my_rate"
    )
    lrs = finder.results["lr"]
    assert lrs[0] == 0.01 and lrs[1] == pytest.approx(
        0.01 + 2 / 15 * 0.09
    )  # step k: base + (k+1)/n (end-base)
    assert model.my_rate == finder.suggestion() and model.hparams.lr == 0.5


def test_one_line_refusals(tmp_path):
    tuner = Tuner(quiet(ember, default_root_dir=tmp_path))
    with pytest.raises(ConfigError, match="'lr' or 'learning_rate'"):

        class NoRate(EmberClassifier):
            def __init__(self) -> None:
                ember.Module.__init__(self)
                self.net = nn.Linear(64, 10)

        tuner.lr_find(NoRate(), digits())
    with pytest.raises(ConfigError, match="method='fit' is the only one"):
        tuner.lr_find(EmberClassifier(), method="validate")
    with pytest.raises(ConfigError, match="'exponential' or 'linear'"):
        tuner.lr_find(EmberClassifier(), digits(), mode="cosine")
    with pytest.raises(ConfigError, match="mode="):
        LearningRateFinder(mode="cosine")


def test_the_callback_tunes_at_fit_start_and_saves_the_plot(tmp_path):
    pytest.importorskip("matplotlib")
    torch.manual_seed(0)
    model = EmberClassifier()
    finder = LearningRateFinder(
        min_lr=1e-4, max_lr=1, num_training_steps=30, save_plot=True
    )  # ember's option
    trainer = ember.Trainer(
        max_epochs=1,
        default_root_dir=tmp_path,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[finder],
    )
    trainer.fit(model, digits())
    suggested = finder.optimal_lr.suggestion()
    assert model.hparams.lr == suggested
    # The fit went on with the suggestion: its optimizer's rate (StepLR stepped once at the epoch end).
    assert trainer.optimizers[0].param_groups[0]["lr"] == pytest.approx(suggested * 0.5)
    plot = tmp_path / "lightning_logs" / "version_0" / "lr_find.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_returns_a_figure_with_the_suggestion_marked(both):
    pytest.importorskip("matplotlib")
    figure = both["ember"].plot(suggest=True)
    lines = figure.axes[0].get_lines()
    assert len(lines) == 2 and figure.axes[0].get_xscale() == "log"


def test_docstring_examples():
    result = doctest.testmod(ember.callbacks.lr_finder)
    assert result.attempted > 0 and result.failed == 0


def test_plot_without_matplotlib_is_one_line(both, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed: its import fails
    with pytest.raises(ConfigError, match=r"needs matplotlib.*pip install 'ember\[plot\]'"):
        both["ember"].plot()
    ember.callbacks.lr_finder.save_plot(
        both["ember"], "/nonexistent"
    )  # the callback's plot: skipped, nothing written


class SearchAtMilestones(LearningRateFinder):
    """Lightning's docs' subclass: a search at epoch 0 and at each milestone, from on_train_epoch_start."""

    def __init__(self, milestones, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.milestones, self.found = milestones, []

    def on_fit_start(self, *args, **kwargs):
        return

    def on_train_epoch_start(self, trainer, pl_module):
        if trainer.current_epoch in self.milestones or trainer.current_epoch == 0:
            self.lr_find(trainer, pl_module)
            self.found.append(
                (
                    len(self.optimal_lr.results["lr"]),
                    self.optimal_lr.suggestion(),
                    trainer.optimizers[0].param_groups[0]["lr"],
                )
            )


def test_a_search_at_a_later_epoch_runs_inside_the_fit_and_sets_the_running_optimizers_rate(tmp_path):
    class Counted(EmberClassifier):
        setups = 0

        def setup(self, stage):
            type(self).setups += 1

    torch.manual_seed(0)
    model, finder = Counted(), SearchAtMilestones((1,), num_training_steps=15, early_stop_threshold=None)
    trainer = quiet(ember, max_epochs=2, default_root_dir=tmp_path, callbacks=[finder])
    trainer.fit(model, digits())
    # each search records its 15 points and sets the fit's optimizer to its suggestion (Lightning 2.6.6's
    # search after epoch 0 records none: its restored loop
    # runs no step); the module's setup ran once, for the fit
    assert [n for n, _, _ in finder.found] == [15, 15]
    assert all(rate == suggestion for _, suggestion, rate in finder.found)
    assert model.hparams.lr == finder.found[-1][1] and Counted.setups == 1
    assert trainer.global_step == 40  # both epochs trained all their 20 batches
