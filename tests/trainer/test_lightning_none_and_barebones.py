"""Arguments passed as None, Trainer(barebones=True) logging, and the gradients released before validation,
each run beside the real Lightning 2.6 on the same tiny module: the results must be the same."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils.data import DataLoader

import ember
from ember.errors import ConfigError
from ember.loggers import CSVLogger

pl = pytest.importorskip("lightning.pytorch")
from lightning.pytorch.loggers import CSVLogger as LightningCSVLogger  # noqa: E402

QUIET = dict(enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")


def module_class(base, log_kwargs=None):
    class Tiny(base):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)
            self.grads_at_validation: list[float | None] = []

        def training_step(self, batch, batch_idx):
            loss = self.layer(batch).pow(2).mean()
            self.log("loss", loss, **(log_kwargs or {}))
            return loss

        def validation_step(self, batch, batch_idx):
            self.log("val", self.layer(batch).mean())

        def on_validation_start(self):
            grad = self.layer.weight.grad
            self.grads_at_validation.append(None if grad is None else float(grad.abs().sum()))

        def predict_step(self, batch, batch_idx):
            return self.layer(batch)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    return Tiny


def both(log_kwargs, tmp_path, **trainer_kwargs):
    """Fit the same module under Lightning and ember; their (trainer, module) pairs."""
    out = {}
    for name, base, trainer_class, logger_class in (
        ("lightning", pl.LightningModule, pl.Trainer, LightningCSVLogger),
        ("ember", ember.Module, ember.Trainer, CSVLogger),
    ):
        torch.manual_seed(0)
        module = module_class(base, log_kwargs)()
        options = dict(
            max_epochs=1,
            limit_train_batches=2,
            log_every_n_steps=1,
            enable_checkpointing=False,
            default_root_dir=tmp_path / name,
            **QUIET,
        )
        if not trainer_kwargs.get("barebones"):
            options["logger"] = logger_class(tmp_path / name)
        options.update(trainer_kwargs)
        if options.get("barebones"):
            for key in (
                "enable_progress_bar",
                "enable_model_summary",
                "enable_checkpointing",
                "log_every_n_steps",
            ):
                options.pop(key)
        trainer = trainer_class(**options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trainer.fit(
                module,
                DataLoader(torch.randn(32, 2), batch_size=4),
                DataLoader(torch.randn(8, 2), batch_size=4) if "val_check_interval" in options else None,
            )
        out[name] = (trainer, module)
    return out


@pytest.mark.parametrize(
    "log_kwargs",
    [
        {"logger": None},
        {"prog_bar": None},
        {
            "on_step": None,
            "on_epoch": None,
            "batch_size": None,
            "metric_attribute": None,
            "sync_dist_group": None,
        },
        {"sync_dist": None, "enable_graph": None, "add_dataloader_idx": None, "rank_zero_only": None},
        {"reduce_fx": "MEAN", "on_epoch": True},
    ],
)
def test_log_arguments_given_as_none_or_in_capitals_mean_what_they_mean_in_lightning(log_kwargs, tmp_path):
    runs = both(log_kwargs, tmp_path)
    (lt, _), (et, _) = runs["lightning"], runs["ember"]
    assert sorted(et.logged_metrics) == sorted(lt.logged_metrics) != []
    assert sorted(et.callback_metrics) == sorted(lt.callback_metrics)
    assert sorted(et.progress_bar_metrics) == sorted(lt.progress_bar_metrics)


def test_log_with_logger_none_reaches_the_loggers_files(tmp_path):
    trainer, _ = both({"logger": None}, tmp_path)["ember"]
    header = (tmp_path / "ember").rglob("metrics.csv").__next__().read_text().splitlines()[0]
    assert "loss" in header.split(",")
    assert "loss" in trainer.logged_metrics


def test_log_dict_with_logger_none_reaches_the_loggers(tmp_path):
    class Dict(module_class(ember.Module)):
        def training_step(self, batch, batch_idx):
            loss = self.layer(batch).pow(2).mean()
            self.log_dict({"a": loss, "b": loss * 2}, logger=None)
            return loss

    trainer = ember.Trainer(
        max_epochs=1,
        limit_train_batches=2,
        log_every_n_steps=1,
        enable_checkpointing=False,
        logger=CSVLogger(tmp_path),
        default_root_dir=tmp_path,
        **QUIET,
    )
    trainer.fit(Dict(), DataLoader(torch.randn(16, 2), batch_size=4))
    assert {"a", "b"} <= set(trainer.logged_metrics)


def test_an_unknown_reduce_fx_is_still_refused_in_one_line(tmp_path):
    trainer = ember.Trainer(
        max_epochs=1,
        limit_train_batches=1,
        logger=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
        **QUIET,
    )
    with pytest.raises(ConfigError, match="reduce_fx='median'"):
        trainer.fit(
            module_class(ember.Module, {"reduce_fx": "median"})(), DataLoader(torch.randn(4, 2), batch_size=4)
        )


def test_predict_with_return_predictions_none_returns_them_as_lightning_does(tmp_path):
    runs = both({}, tmp_path)
    data = torch.randn(8, 2)
    got = {}
    for name, (trainer, module) in runs.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got[name] = trainer.predict(module, DataLoader(data, batch_size=4), return_predictions=None)
    assert isinstance(got["ember"], list) and len(got["ember"]) == len(got["lightning"]) == 2
    for mine, theirs in zip(got["ember"], got["lightning"], strict=True):
        assert torch.equal(mine, theirs)
    trainer, module = runs["ember"]
    assert trainer.predict(module, DataLoader(data, batch_size=4), return_predictions=False) is None


def test_barebones_log_is_a_warned_no_op_as_in_lightning(tmp_path):
    runs = both({"on_epoch": True}, tmp_path, barebones=True)
    (lt, lm), (et, em) = runs["lightning"], runs["ember"]
    assert dict(et.callback_metrics) == dict(lt.callback_metrics) == {}
    assert dict(et.logged_metrics) == dict(lt.logged_metrics) == {}
    assert dict(et.progress_bar_metrics) == dict(lt.progress_bar_metrics) == {}
    with pytest.warns(UserWarning, match="barebones"):
        result = et.validate(em, DataLoader(torch.randn(8, 2), batch_size=4), verbose=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = lt.validate(lm, DataLoader(torch.randn(8, 2), batch_size=4), verbose=False)
    assert result == expected == [{}]


def test_gradients_are_released_before_validation_except_inside_an_accumulation_window(tmp_path):
    # validation after batch 3 (inside the window 3-4: the gradients stay) and after batch 6 (a window's end:
    # Lightning's default on_validation_model_zero_grad sets them to None)
    runs = both(
        {},
        tmp_path,
        limit_train_batches=8,
        accumulate_grad_batches=2,
        val_check_interval=3,
        num_sanity_val_steps=0,
    )
    seen = {name: module.grads_at_validation for name, (_, module) in runs.items()}
    assert seen["ember"][1] is None and seen["ember"][0] is not None
    assert seen["ember"] == pytest.approx(seen["lightning"])


def test_an_override_of_on_validation_model_zero_grad_runs_in_its_place(tmp_path):
    calls = []

    class KeepGrads(module_class(ember.Module)):
        def on_validation_model_zero_grad(self):
            calls.append(self.layer.weight.grad is not None)  # no zero_grad: the gradients stay

    module = KeepGrads()
    trainer = ember.Trainer(
        max_epochs=1,
        limit_train_batches=2,
        val_check_interval=2,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        default_root_dir=tmp_path,
        **QUIET,
    )
    trainer.fit(
        module, DataLoader(torch.randn(16, 2), batch_size=4), DataLoader(torch.randn(8, 2), batch_size=4)
    )
    assert calls == [True]
    assert module.grads_at_validation[0] is not None
