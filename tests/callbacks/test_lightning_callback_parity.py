"""Every Lightning 2.6 callback against the real one, scenario by scenario (issue 13).

Each scenario is one function of `L` — the `lightning.pytorch` namespace or `ember` — that fits a small module
with a callback and returns what a user observes: files written, the callback's kept paths and scores, its
`state_dict()`, counters, logged metrics, final weights (rounded), the tuner's suggestion, printed messages.
The test runs every scenario on both libraries and asserts the observations are equal. Paths are written
relative to the run's folder; wall-clock values are reduced to what is deterministic (keys, types, order).
"""

from __future__ import annotations

import contextlib
import csv
import importlib
import io
import logging
import math
import os
from datetime import timedelta
from pathlib import Path

import pytest
import torch

import ember
from tests.trainer.test_lightning_parity import _ember_spelling  # documented renames (none today)

pl = pytest.importorskip("lightning.pytorch")

QUIET = {
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "logger": False,
    "num_sanity_val_steps": 0,
}


# --------------------------------------------------------------------------- the twin model and data


def _data(n: int = 32, seed: int = 0) -> torch.utils.data.TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=generator)
    return torch.utils.data.TensorDataset(x, x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]))


def _loader(n: int = 32, batch_size: int = 8, seed: int = 0) -> torch.utils.data.DataLoader:
    return torch.utils.data.DataLoader(_data(n, seed), batch_size=batch_size)


def _net(L, scores: list[float] | None = None, **methods):
    """A LightningModule subclass of `L`: 4 -> 1 linear regression, SGD(lr=0.05); logs `train_loss` (step),
    `train_epoch_loss` (epoch), `val_loss` and, given `scores`, `score` = scores[epoch] from validation."""

    def __init__(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.layer(x)

    def loss(self, batch):
        x, y = batch
        return torch.nn.functional.mse_loss(self(x), y)

    def training_step(self, batch, batch_idx):
        loss = self.loss(batch)
        self.log("train_loss", loss)
        self.log("train_epoch_loss", loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self.loss(batch))
        if scores is not None:
            self.log("score", torch.tensor(float(scores[min(self.current_epoch, len(scores) - 1)])))

    def predict_step(self, batch, batch_idx, dataloader_idx=0):
        return self(batch[0])

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)

    body = {
        "__init__": __init__,
        "forward": forward,
        "loss": loss,
        "training_step": training_step,
        "validation_step": validation_step,
        "predict_step": predict_step,
        "configure_optimizers": configure_optimizers,
        **methods,
    }
    return type("Net", (L.LightningModule,), body)


def _fit(L, root, callbacks, module=None, val=True, **kwargs):
    options = {
        **QUIET,
        "max_epochs": 3,
        "default_root_dir": str(root),
        "accelerator": "cpu",
        "devices": 1,
        "callbacks": callbacks,
        **kwargs,
    }
    trainer = L.Trainer(**options)
    trainer.fit(module if module is not None else _net(L)(), _loader(), _loader(seed=1) if val else None)
    return trainer


# --------------------------------------------------------------------------- observations as plain data


def _plain(value, root=None):
    """Tensors as rounded floats, paths relative to `root`, containers element by element."""
    if isinstance(value, torch.Tensor):
        value = value.detach().float()
        if value.numel() == 1:
            return _round(value.item())
        return [_round(v) for v in value.flatten().tolist()]
    if isinstance(value, float):
        return _round(value)
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, str) and root is not None:
        return value.replace(str(root), "<root>")
    if isinstance(value, dict):
        return {_plain(k, root): _plain(v, root) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v, root) for v in value]
    return value


def _round(number: float) -> float | str:
    return repr(number) if not math.isfinite(number) else round(number, 5)


def _files(folder) -> list[str]:
    folder = Path(folder)
    return (
        sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() or p.is_symlink())
        if folder.exists()
        else []
    )


def _weights(module) -> dict:
    return _plain({k: v for k, v in module.state_dict().items()})


def _counters(trainer) -> dict:
    return {
        "epoch": trainer.current_epoch,
        "global_step": trainer.global_step,
        "should_stop": trainer.should_stop,
    }


def _metrics(trainer) -> dict:
    return _plain(dict(trainer.callback_metrics))


def _library(L) -> str:
    return "lightning" if L is pl else "ember"


def _errors(L):
    """The error each library raises for a misconfiguration."""
    return pl.utilities.exceptions.MisconfigurationException if L is pl else ember.errors.ConfigError


def _raised(call) -> tuple[str, str] | None:
    """What `call()` raised: its kind and message. "runtime" for a RuntimeError (ember's missing-metric errors
    are RuntimeErrors too, as Lightning's), "type" for a TypeError, else "config" for a misconfiguration:
    Lightning's MisconfigurationException or ValueError, ember's
    ConfigError (a ValueError, so `except ValueError` holds)."""
    try:
        call()
    except RuntimeError as error:
        return "runtime", str(error)
    except TypeError as error:
        return "type", str(error)
    except (pl.utilities.exceptions.MisconfigurationException, ValueError) as error:
        return "config", str(error)
    return None


def _sorted_names(raised: tuple[str, str] | None) -> tuple[str, str] | None:
    """The message with its list of logged names sorted: their order is the Trainer's `callback_metrics`
    order, not the callback's (ModelCheckpoint: "metrics: ['a',
    'b']. HINT...", EarlyStopping: "following: `a`, `b`")."""
    if raised is None:
        return None
    kind, message = raised
    if "metrics: [" in message:
        head, rest = message.split("metrics: [", 1)
        names, tail = rest.split("]", 1)
        message = f"{head}metrics: [{', '.join(sorted(names.split(', ')))}]{tail}"
    elif "following: " in message:
        head, names = message.split("following: ", 1)
        message = f"{head}following: {', '.join(sorted(names.split(', ')))}"
    return kind, message


def _kind(raised: tuple[str, str] | None) -> str | None:
    return None if raised is None else raised[0]


# --------------------------------------------------------------------------- ModelCheckpoint


def _kept(callback, root) -> dict:
    score = callback.best_model_score
    # ember's state adds the step last saved, so a resumed run does not save that step twice (a superset).
    state = {k: v for k, v in callback.state_dict().items() if k != "last_global_step_saved"}
    return _plain(
        {
            "files": _files(callback.dirpath),
            "best": callback.best_model_path,
            "last": callback.last_model_path,
            "kth": callback.kth_best_model_path,
            "best_k": dict(callback.best_k_models),
            "kth_value": callback.kth_value,
            "best_score": None if score is None else score,
            "state": state,
        },
        root,
    )


def _checkpoint(scores=None, fit_args=None, module_methods=None, **kwargs):
    """Fit with one ModelCheckpoint(dirpath=<root>/ckpt, **kwargs); observe what it kept and wrote."""

    def scenario(L, root):
        callback = L.callbacks.ModelCheckpoint(dirpath=root / "ckpt", **kwargs)
        module = _net(L, scores, **(module_methods or {}))()
        trainer = _fit(L, root, [callback], module=module, **(fit_args or {}))
        return {**_kept(callback, root), **_counters(trainer)}

    return scenario


SCORES = [0.5, 0.3, 0.4, 0.2, 0.6]


def _log_epoch_end(self):
    """A module's on_train_epoch_end logging a metric the
    monitoring callbacks must see (they run after it)."""
    self.log("from_epoch_end", torch.tensor(float([1, 3, 2][self.current_epoch])))


def _checkpoint_monitor_missing(L, root):
    callback = L.callbacks.ModelCheckpoint(dirpath=root / "ckpt", monitor="nope")
    return {
        "raised": _sorted_names(_raised(lambda: _fit(L, root, [callback]))),
        "files": _files(root / "ckpt"),
    }


def _checkpoint_link_target(L, root):
    callback = L.callbacks.ModelCheckpoint(dirpath=root / "ckpt", monitor="val_loss", save_last="link")
    _fit(L, root, [callback])
    last = root / "ckpt" / "last.ckpt"
    return {
        **_kept(callback, root),
        "symlink": last.is_symlink(),
        "target": os.readlink(last) if last.is_symlink() else None,
    }


def _checkpoint_reload(L, root):
    """The weights saved as best load back into a fresh module and equal the callback's best."""
    callback = L.callbacks.ModelCheckpoint(dirpath=root / "ckpt", monitor="val_loss", save_top_k=1)
    _fit(L, root, [callback], max_epochs=2)
    saved = torch.load(callback.best_model_path, weights_only=False)
    # ember's file holds more (its format version, RNG, progress, ...); Lightning's keys must all be there.
    lightnings = {
        "callbacks",
        "epoch",
        "global_step",
        "loops",
        "lr_schedulers",
        "optimizer_states",
        "state_dict",
    }
    return {
        "keys": sorted(lightnings & set(saved)),
        "epoch": saved["epoch"],
        "global_step": saved["global_step"],
        "weights": _plain(saved["state_dict"]),
        "callback_keys": sorted(saved["callbacks"]),
    }


# --------------------------------------------------------------------------- EarlyStopping


def _capture_info(L):
    """Lightning's INFO messages (its `lightning.pytorch` logger) or what ember prints to stderr."""
    stream = io.StringIO()
    if L is pl:
        handler = logging.StreamHandler(stream)
        logger = logging.getLogger("lightning.pytorch")

        @contextlib.contextmanager
        def attached():
            # INFO reaches the handler whatever earlier tests (or Lightning itself) set on these loggers
            family = [
                logging.getLogger(name)
                for name in list(logging.root.manager.loggerDict)
                if name.startswith("lightning.pytorch.")
            ]
            saved = [(each, each.level, each.disabled) for each in [logger, *family]]
            disabled_below = logging.root.manager.disable
            logging.disable(logging.NOTSET)
            for each in family:
                each.setLevel(logging.NOTSET)
                each.disabled = False
            logger.setLevel(logging.INFO)
            logger.disabled = False
            logger.addHandler(handler)
            try:
                yield stream
            finally:
                logger.removeHandler(handler)
                for each, level, disabled in saved:
                    each.setLevel(level)
                    each.disabled = disabled
                logging.disable(disabled_below)

        return attached()
    return contextlib.redirect_stderr(stream)


def _early_stopping(scores, monitor="score", fit_args=None, verbose=False, module_methods=None, **kwargs):
    def scenario(L, root):
        callback = L.callbacks.EarlyStopping(monitor=monitor, verbose=verbose, **kwargs)
        module = _net(L, scores, **(module_methods or {}))()
        with _capture_info(L) as stream:
            trainer = _fit(
                L, root, [callback], module=module, **{"max_epochs": len(scores), **(fit_args or {})}
            )
        said = [line for line in stream.getvalue().splitlines() if "Metric" in line or "Monitored" in line]
        return {
            "stopped_epoch": callback.stopped_epoch,
            "wait_count": callback.wait_count,
            "reason": callback.stopping_reason.name,
            "reason_message": callback.stopping_reason_message,
            "best_score": _plain(callback.best_score),
            "state": _plain(callback.state_dict()),
            "said": said if verbose else None,
            **_counters(trainer),
        }

    return scenario


def _early_stopping_missing_strict(L, root):
    callback = L.callbacks.EarlyStopping(monitor="nope")
    return {"raised": _sorted_names(_raised(lambda: _fit(L, root, [callback])))}


# --------------------------------------------------------------------------- LearningRateMonitor


def _lr_monitor(optimizers, **kwargs):
    def scenario(L, root):
        monitor = L.callbacks.LearningRateMonitor(**kwargs)
        logger = L.loggers.CSVLogger(str(root), name="logs")
        trainer = _fit(
            L,
            root,
            [monitor],
            module=_net(L, configure_optimizers=optimizers)(),
            logger=logger,
            log_every_n_steps=2,
        )
        logged = {k: v for k, v in trainer.logged_metrics.items() if k.startswith(("lr", "backbone", "head"))}
        return {
            "lrs": _plain(monitor.lrs),
            "logged": _plain(logged),
            "csv": _csv_cells(Path(trainer.logger.log_dir) / "metrics.csv", ("lr", "backbone")),
        }

    return scenario


def _csv_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _csv_cells(path: Path, prefixes: tuple[str, ...]) -> list[tuple[str, dict[str, str]]]:
    """The rows of a CSVLogger's metrics.csv holding a column
    that starts with one of `prefixes`: (step, cells)."""
    kept = []
    for row in _csv_rows(path):
        cells = {k: v for k, v in row.items() if v and k.startswith(prefixes)}
        if cells:
            kept.append((row["step"], cells))
    return kept


def _sgd_step_scheduler(self):
    optimizer = torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 / (1 + step))
    return [optimizer], [{"scheduler": scheduler, "interval": "step"}]


def _adam_named_groups(self):
    optimizer = torch.optim.Adam(
        [{"params": [self.layer.weight]}, {"params": [self.layer.bias], "lr": 0.01}],
        lr=0.02,
        weight_decay=1e-4,
    )
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "name": "backbone"}}


def _two_optimizers(self):
    first = torch.optim.SGD([self.layer.weight], lr=0.1, momentum=0.5)
    second = torch.optim.SGD([self.layer.bias], lr=0.2)
    return [first, second], [torch.optim.lr_scheduler.StepLR(first, step_size=1, gamma=0.5)]


def _manual_step(self, batch, batch_idx):
    for optimizer in self.optimizers():
        optimizer.zero_grad()
        self.manual_backward(self.loss(batch))
        optimizer.step()


def _lr_monitor_manual(L, root):
    """Two optimizers under manual optimization: names
    `lr-SGD` and `lr-SGD-1`; epoch schedulers the module's."""
    monitor = L.callbacks.LearningRateMonitor(log_momentum=True)
    logger = L.loggers.CSVLogger(str(root), name="logs")
    module = _net(L, configure_optimizers=_two_optimizers, training_step=_manual_step)()
    module.automatic_optimization = False
    trainer = _fit(L, root, [monitor], module=module, logger=logger, log_every_n_steps=2)
    return {
        "lrs": _plain(monitor.lrs),
        "csv": _csv_cells(Path(trainer.logger.log_dir) / "metrics.csv", ("lr",)),
        **_counters(trainer),
    }


def _plain_sgd(self):
    return torch.optim.SGD(self.parameters(), lr=0.05)


# --------------------------------------------------------------------------- Timer


def _timer(duration, **kwargs):
    def scenario(L, root):
        timer = L.callbacks.Timer(duration=duration, verbose=False, **kwargs)
        trainer = _fit(L, root, [timer], max_epochs=2)
        elapsed = {stage: timer.time_elapsed(stage) for stage in ("train", "validate", "test")}
        remaining = timer.time_remaining("train")
        state = timer.state_dict()
        return {
            "elapsed_positive": {k: v > 0 for k, v in elapsed.items()},
            "remaining": None if remaining is None else type(remaining).__name__,
            "state_keys": sorted(state),
            "time_elapsed_keys": sorted(state.get("time_elapsed", {})),
            "start_train": timer.start_time("train") is not None,
            "end_train": timer.end_time("train") is not None,
            **_counters(trainer),
        }

    return scenario


def _timer_duration_refused(L, root):
    return {
        "raised": [
            _kind(_raised(lambda d=d: L.callbacks.Timer(duration=d)))
            for d in ("1:2:3", "00:00:00:01", {"minutes": 1}, "x")
        ]
    }


# ---------------------------------------------------------------------------
# accumulation, averaging, finetuning


def _grad_accumulation(L, root):
    callback = L.callbacks.GradientAccumulationScheduler(scheduling={0: 2, 2: 1})
    module = _net(L)()
    trainer = _fit(L, root, [callback], module=module, max_epochs=3)
    return {"weights": _weights(module), **_counters(trainer)}


def _swa(**kwargs):
    def scenario(L, root):
        callback = L.callbacks.StochasticWeightAveraging(**kwargs)
        module = _net(L)()
        trainer = _fit(L, root, [callback], module=module, max_epochs=4)
        return {
            "weights": _weights(module),
            "lrs": [g["lr"] for g in trainer.optimizers[0].param_groups],
            **_counters(trainer),
        }

    return scenario


def _ema(L, root):
    callback = L.callbacks.EMAWeightAveraging(decay=0.5)
    module = _net(L)()
    trainer = _fit(L, root, [callback], module=module, max_epochs=2)
    return {"weights": _weights(module), "metrics": _metrics(trainer), **_counters(trainer)}


def _weight_averaging(L, root):
    callback = L.callbacks.WeightAveraging()
    module = _net(L)()
    trainer = _fit(L, root, [callback], module=module, max_epochs=2)
    return {"weights": _weights(module), "metrics": _metrics(trainer), **_counters(trainer)}


def _backbone_net(L):
    def __init__(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.backbone = torch.nn.Linear(4, 4)
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.layer(torch.relu(self.backbone(x)))

    def configure_optimizers(self):
        return torch.optim.SGD(filter(lambda p: p.requires_grad, self.parameters()), lr=0.1)

    def on_train_epoch_end(self):
        groups = self.trainer.optimizers[0].param_groups
        self.seen.append([(round(g["lr"], 8), len(g["params"])) for g in groups])

    cls = _net(
        L,
        __init__=__init__,
        forward=forward,
        configure_optimizers=configure_optimizers,
        on_train_epoch_end=on_train_epoch_end,
    )
    cls.seen = None
    return cls


def _backbone_finetuning(L, root):
    callback = L.callbacks.BackboneFinetuning(
        unfreeze_backbone_at_epoch=1,
        lambda_func=lambda epoch: 2.0,
        backbone_initial_ratio_lr=0.1,
        should_align=True,
    )
    module = _backbone_net(L)()
    module.seen = []
    _fit(L, root, [callback], module=module, max_epochs=3)
    return {
        "groups": module.seen,
        "weights": _weights(module),
        "requires_grad": {n: p.requires_grad for n, p in module.named_parameters()},
        "state": _plain(callback.state_dict()),
    }


def _pruning(**kwargs):
    def scenario(L, root):
        callback = L.callbacks.ModelPruning(verbose=0, **kwargs)
        module = _net(L)()
        _fit(L, root, [callback], module=module, max_epochs=2)
        weight = module.layer.weight
        return {
            "zeros": int((weight == 0).sum()),
            "keys": sorted(module.state_dict()),
            "weights": _weights(module),
        }

    return scenario


# --------------------------------------------------------------------------- ThroughputMonitor


def _throughput(L, root):
    monitor = L.callbacks.ThroughputMonitor(batch_size_fn=lambda batch: batch[0].size(0))
    logger = L.loggers.CSVLogger(str(root), name="logs")
    trainer = _fit(L, root, [monitor], logger=logger, log_every_n_steps=1, max_epochs=2, limit_val_batches=2)
    rows = _csv_rows(Path(trainer.logger.log_dir) / "metrics.csv")
    steps = []
    for cells in rows:
        named = sorted(k for k, v in cells.items() if v and "/" in k)
        if named:
            steps.append((cells["step"], cells.get("epoch", ""), named))
    return {"columns": sorted(c for c in rows[0] if "/" in c), "rows": steps}


# --------------------------------------------------------------------------- finders


def _tuner(L):
    return importlib.import_module(f"{L.__name__}.tuner").Tuner


def _lr_find(**kwargs):
    def scenario(L, root):
        module = _net(L)()
        module.lr = 0.05
        trainer = L.Trainer(
            **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 10}
        )
        with _capture_info(L) as stream:
            finder = _tuner(L)(trainer).lr_find(module, _loader(), num_training=20, **kwargs)
        return {
            "said": _finder_lines(stream, root),
            "suggestion": _plain(finder.suggestion()),
            "results_keys": sorted(finder.results),
            "n": len(finder.results["lr"]),
            "lrs": _plain(finder.results["lr"][:5]),
            "losses": _plain(finder.results["loss"][:5]),
            "model_lr": _plain(module.lr),
            "weights": _weights(module),
            "files": _files(root),
        }

    return scenario


_FINDER_LINES = (
    "Batch size",
    "The batch size",
    "Applying margin",
    "Finished batch size",
    "Reached the maximum",
    "LR finder",
    "Learning rate set",
)


def _finder_lines(stream: io.StringIO, root) -> list[str]:
    """What the finders said (Lightning's INFO lines; ember prints the same words to stderr)."""
    return [
        line.replace(str(root), "<root>")
        for line in stream.getvalue().splitlines()
        if line.startswith(_FINDER_LINES)
    ]


def _sized_net(L):
    """The twin reading its batch size from `self.batch_size` (what the finders tune)."""

    def train_dataloader(self):
        return _loader(n=64, batch_size=self.batch_size)

    def val_dataloader(self):
        return _loader(n=16, batch_size=self.batch_size, seed=1)

    return _net(L, train_dataloader=train_dataloader, val_dataloader=val_dataloader)


def _scale_batch_size(**kwargs):
    def scenario(L, root):
        module = _sized_net(L)()
        module.batch_size = 2
        trainer = L.Trainer(**{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 1})
        with _capture_info(L) as stream:
            found = _tuner(L)(trainer).scale_batch_size(module, **kwargs)
        return {
            "said": _finder_lines(stream, root),
            "found": found,
            "attribute": module.batch_size,
            "weights": _weights(module),
            "files": _files(root),
        }

    return scenario


def _batch_size_finder_callback(L, root):
    finder = L.callbacks.BatchSizeFinder(mode="binsearch", max_trials=4, steps_per_trial=1, init_val=4)
    module = _sized_net(L)()
    module.batch_size = 2
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "max_epochs": 1,
            "callbacks": [finder],
        }
    )
    trainer.fit(module)
    return {"optimal": finder.optimal_batch_size, "attribute": module.batch_size, **_counters(trainer)}


def _batch_size_finder_with_passed_loaders(L, root):
    """Lightning refuses the finder when fit is given dataloaders (it cannot resize them)."""
    finder = L.callbacks.BatchSizeFinder(max_trials=2, steps_per_trial=1)
    module = _sized_net(L)()
    module.batch_size = 2
    return {"raised": _kind(_raised(lambda: _fit(L, root, [finder], module=module, max_epochs=1)))}


def _lr_finder_callback(L, root):
    finder = L.callbacks.LearningRateFinder(num_training_steps=10)
    module = _net(L)()
    module.learning_rate = 0.05
    trainer = _fit(L, root, [finder], module=module, max_epochs=1)
    return {
        "suggestion": _plain(finder.optimal_lr.suggestion()),
        "attribute": _plain(module.learning_rate),
        **_counters(trainer),
    }


def _lr_find_attribute(holder: str, attr_name: str = ""):
    """Tuner.lr_find updates the learning rate where the model holds it: `lr` / `learning_rate` as an
    attribute or in hparams, or the name given as attr_name."""

    def scenario(L, root):
        module = _net(L)()
        if holder == "hparams":
            module.hparams["learning_rate"] = 0.05
        else:
            setattr(module, holder, 0.05)
        trainer = L.Trainer(
            **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 10}
        )
        finder = _tuner(L)(trainer).lr_find(
            module, _loader(), num_training=15, attr_name=attr_name, early_stop_threshold=None
        )
        value = module.hparams["learning_rate"] if holder == "hparams" else getattr(module, holder)
        return {
            "suggestion": _plain(finder.suggestion()),
            "updated": _plain(value),
            "n": len(finder.results["lr"]),
        }

    return scenario


def _lr_find_missing_attribute(attr_name: str = ""):
    """A model without `lr`/`learning_rate` (or without the attr_name given): Lightning raises an
    AttributeError, and so does ember (a ConfigError that
    is an AttributeError); update_attr=False needs none."""

    def scenario(L, root):
        trainer = L.Trainer(
            **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 10}
        )
        try:
            _tuner(L)(trainer).lr_find(_net(L)(), _loader(), num_training=5, attr_name=attr_name)
        except AttributeError:
            raised = "AttributeError"
        else:
            raised = None
        # (a fresh Trainer: Lightning's Tuner leaves its finder callback in a Trainer whose search raised)
        trainer = L.Trainer(
            **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 10}
        )
        finder = _tuner(L)(trainer).lr_find(_net(L)(), _loader(), num_training=5, update_attr=False)
        return {"raised": raised, "without_update": len(finder.results["lr"])}

    return scenario


def _lr_find_plot(L, root):
    """`finder.plot(suggest=True)`: a matplotlib Figure with the loss curve on a log axis and the suggestion
    marked by a red dot; `plot(ax=...)` draws on the axes given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    module = _net(L)()
    module.lr = 0.05
    trainer = L.Trainer(**{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 10})
    finder = _tuner(L)(trainer).lr_find(module, _loader(), num_training=20, early_stop_threshold=None)
    figure = finder.plot(suggest=True)
    ax = figure.axes[0]
    lines = [
        (_plain(list(line.get_xdata())), _plain(list(line.get_ydata())), line.get_marker(), line.get_color())
        for line in ax.get_lines()
    ]
    given = plt.figure().subplots()
    same = finder.plot(ax=given) is given.figure
    observed = {
        "figure": isinstance(figure, matplotlib.figure.Figure),
        "axes": len(figure.axes),
        "lines": lines,
        "xscale": ax.get_xscale(),
        "labels": (ax.get_xlabel(), ax.get_ylabel()),
        "on_given_axes": same,
        "given_lines": len(given.get_lines()),
    }
    plt.close("all")
    return observed


def _scale_batch_size_stage(method, **kwargs):
    """Tuner.scale_batch_size(method="validate"/"test"/"predict"): the trials run that stage's loop."""

    def scenario(L, root):
        module = _data_hooks_net(L)()
        module.batch_size = 2
        trainer = L.Trainer(**{**QUIET, "default_root_dir": str(root), "accelerator": "cpu"})
        with _capture_info(L) as stream:
            found = _tuner(L)(trainer).scale_batch_size(module, method=method, steps_per_trial=1, **kwargs)
        return {
            "said": _finder_lines(stream, root),
            "found": found,
            "attribute": module.batch_size,
            "weights": _weights(module),
        }

    return scenario


def _scale_batch_size_missing_attribute(L, root):
    """A model without the batch size attribute: Lightning's MisconfigurationException (ember's ConfigError),
    from the Tuner and from the callback."""
    trainer = L.Trainer(**{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "max_epochs": 1})
    module = _sized_net(L)()
    from_tuner = _kind(_raised(lambda: _tuner(L)(trainer).scale_batch_size(module)))
    other_name = _kind(_raised(lambda: _tuner(L)(trainer).scale_batch_size(module, batch_arg_name="bs")))
    finder = L.callbacks.BatchSizeFinder()
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "max_epochs": 1,
            "callbacks": [finder],
        }
    )
    return {
        "tuner": from_tuner,
        "other_name": other_name,
        "callback": _kind(_raised(lambda: trainer.fit(_sized_net(L)()))),
    }


def _tuner_refusals(L, root):
    """The arguments Lightning's Tuner refuses, each refused by ember too (the kind of error: a ValueError or
    MisconfigurationException there, a ConfigError here)."""

    def tuner(*callbacks):
        return _tuner(L)(
            L.Trainer(
                **{
                    **QUIET,
                    "default_root_dir": str(root),
                    "accelerator": "cpu",
                    "max_epochs": 1,
                    "callbacks": list(callbacks),
                }
            )
        )

    def sized():
        module = _sized_net(L)()
        module.batch_size, module.lr = 2, 0.05
        return module

    calls = {
        "lr_find_validate": lambda: tuner().lr_find(sized(), method="validate"),
        "lr_find_mode": lambda: tuner().lr_find(sized(), mode="cosine"),
        "lr_find_twice": lambda: tuner(L.callbacks.LearningRateFinder()).lr_find(sized()),
        "scale_method": lambda: tuner().scale_batch_size(sized(), method="train"),
        "scale_mode": lambda: tuner().scale_batch_size(sized(), mode="grow"),
        "scale_twice": lambda: tuner(L.callbacks.BatchSizeFinder()).scale_batch_size(sized()),
        "fit_with_dataloaders": lambda: tuner().scale_batch_size(sized(), dataloaders=_loader()),
        "test_with_train_dataloaders": lambda: tuner().scale_batch_size(sized(), _loader(), method="test"),
        "scale_passed_train_loader": lambda: tuner().scale_batch_size(sized(), _loader()),
        "finder_mode": lambda: L.callbacks.BatchSizeFinder(mode="grow"),
        "lr_finder_mode": lambda: L.callbacks.LearningRateFinder(mode="cosine"),
    }
    return {name: _kind(_raised(call)) for name, call in calls.items()}


class _LRMilestones:
    """Lightning's docs' LearningRateFinder subclass: a search at epoch 0 and at each milestone."""

    def __init__(self, milestones, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.milestones = milestones
        self.found = []

    def on_fit_start(self, *args, **kwargs):
        return

    def on_train_epoch_start(self, trainer, pl_module):
        if trainer.current_epoch in self.milestones or trainer.current_epoch == 0:
            self.lr_find(trainer, pl_module)
            self.found.append(
                (
                    trainer.current_epoch,
                    self.optimal_lr.suggestion(),
                    trainer.optimizers[0].param_groups[0]["lr"],
                    trainer.global_step,
                )
            )


def _lr_finder_milestones(L, root):
    """The search at epoch 0 sets the learning rate of the running fit's optimizer, and the fit goes on (the
    module's setup and on_fit_start run once: the searches run inside the fit). Only epoch 0's search is
    compared: Lightning 2.6.6's later searches record no point (its restored loop runs no step), so their
    suggestion is None and the rate is kept; ember's search runs (tests/tuner/test_lr_finder.py)."""
    finder = type("LRFinder", (_LRMilestones, L.callbacks.LearningRateFinder), {})(
        (1,), num_training_steps=20, early_stop_threshold=None
    )
    module = _data_hooks_net(L)()
    module.batch_size, module.lr = 4, 0.05
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "max_epochs": 3,
            "callbacks": [finder],
            "enable_checkpointing": False,
        }
    )
    trainer.fit(module)
    return {
        "found": _plain(finder.found[0]),
        "searches": len(finder.found),
        "module_hooks": _module_hooks(module)["run"],
        **_counters(trainer),
    }


#: Lightning's search saves and restores a checkpoint of the run around its trials (its callbacks see
#: state_dict/on_save_checkpoint/on_load_checkpoint, its module on_save_checkpoint/on_load_checkpoint);
#: ember's leaves the run untouched and puts the module's
#: weights back: those names are left out of the recordings.
_SEARCH_CHECKPOINT_HOOKS = ("state_dict", "load_state_dict", "on_save_checkpoint", "on_load_checkpoint")
_RECORDED = (
    "setup",
    "on_fit_start",
    "on_train_start",
    "on_train_epoch_start",
    "on_train_epoch_end",
    "on_validation_start",
    "on_validation_end",
    "on_test_start",
    "on_test_end",
    "on_predict_start",
    "on_predict_end",
    "on_train_end",
    "on_fit_end",
    "teardown",
)


def _recorder(L):
    """A callback recording the hooks of `_RECORDED` it sees, with the global step and the training loader's
    batch size at each (None before the fit's data is fetched)."""

    def record(name):
        def hook(self, trainer, *args, **kwargs):
            loader = trainer.train_dataloader if trainer.state.fn == "fit" else None
            self.calls.append((name, trainer.global_step, getattr(loader, "batch_size", None)))

        return hook

    body = {name: record(name) for name in _RECORDED}
    body["__init__"] = lambda self: setattr(self, "calls", [])
    return type("Recorder", (L.Callback,), body)()


def _data_hooks_net(L):
    """The sized twin recording its data hooks (with the size asked for) and its run hooks."""

    def recorded(name, base=None):
        def hook(self, *args, **kwargs):
            self.hooks.append((name, self.batch_size) if name.endswith("dataloader") else name)
            return base(self, *args, **kwargs) if base is not None else None

        return hook

    sized = _sized_net(L)
    names = (
        "setup",
        "on_fit_start",
        "on_train_start",
        "on_train_epoch_start",
        "on_train_end",
        "on_fit_end",
        "teardown",
        "on_save_checkpoint",
        "on_load_checkpoint",
    )
    body = {name: recorded(name) for name in names}
    body["train_dataloader"] = recorded("train_dataloader", sized.train_dataloader)
    body["val_dataloader"] = recorded("val_dataloader", sized.val_dataloader)
    body["test_dataloader"] = recorded("test_dataloader", sized.val_dataloader)
    body["predict_dataloader"] = recorded("predict_dataloader", sized.val_dataloader)
    body["test_step"] = lambda self, batch, batch_idx: self.log("test_loss", self.loss(batch))
    cls = type("Net", (sized,), body)
    original = cls.__init__

    def __init__(self):
        original(self)
        self.hooks = []

    cls.__init__ = __init__
    return cls


def _without_search_checkpoints(calls):
    return [c for c in calls if (c if isinstance(c, str) else c[0]) not in _SEARCH_CHECKPOINT_HOOKS]


def _module_hooks(module, init_val: int = 2) -> dict:
    """The module's run hooks in order, and its data hooks as the sizes each was asked at (every one asked)
    and the size it was last asked at. How often a data hook is called differs: Lightning asks again wherever
    its loops reset (its setup, each adjustment, each trial); ember asks once per trial and once after the
    search. Its first trial also differs: Lightning's runs on the loader the run fetched before the search (at
    the attribute's size), though it reports init_val; ember's runs at init_val (that fetch is left out)."""
    calls = _without_search_checkpoints(module.hooks)
    data = [c for c in calls if not isinstance(c, str)]
    last = {}
    for name, size in data:
        last[name] = size
    first_trial = {("train_dataloader", init_val)} if init_val != 2 else set()  # ember's (see above)
    return {
        "run": [c for c in calls if isinstance(c, str)],
        "sizes": sorted(set(data) - first_trial),
        "last": last,
    }


def _batch_size_finder_moments(**kwargs):
    """BatchSizeFinder searches at on_fit_start (after setup, before the module's on_fit_start) and the fit
    goes on with the data fetched again at the size found: the
    hooks each side sees, the sizes, the final weights."""

    def scenario(L, root):
        finder = L.callbacks.BatchSizeFinder(**{"max_trials": 3, "steps_per_trial": 2, **kwargs})
        module, recorder = _data_hooks_net(L)(), _recorder(L)
        module.batch_size = 2
        trainer = L.Trainer(
            **{
                **QUIET,
                "default_root_dir": str(root),
                "accelerator": "cpu",
                "max_epochs": 2,
                "callbacks": [finder, recorder],
            }
        )
        with _capture_info(L) as stream:
            trainer.fit(module)
        return {
            "said": _finder_lines(stream, root),
            "optimal": finder.optimal_batch_size,
            "attribute": module.batch_size,
            "loader": trainer.train_dataloader.batch_size,
            "val_loader": trainer.val_dataloaders.batch_size,
            "module_hooks": _module_hooks(module, kwargs.get("init_val", 2)),
            "callback_hooks": recorder.calls,
            "weights": _weights(module),
            **_counters(trainer),
        }

    return scenario


def _batch_size_finder_stage(method, subclass_hook=None):
    """The finder in validate/test/predict: Lightning searches at that stage's start hook (or, in its docs'
    EvalBatchSizeFinder, a subclass calls scale_batch_size from on_test_start), and the stage runs its data at
    the size found."""

    def scenario(L, root):
        base = L.callbacks.BatchSizeFinder
        if subclass_hook is not None:

            def searching(self, trainer, module):
                self.scale_batch_size(trainer, module)

            body = {"on_fit_start": lambda self, *args, **kwargs: None, subclass_hook: searching}
            base = type("EvalBatchSizeFinder", (base,), body)
        finder = base(max_trials=3, steps_per_trial=1, mode="binsearch")
        module = _data_hooks_net(L)()
        module.batch_size = 2
        trainer = L.Trainer(
            **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "callbacks": [finder]}
        )
        with _capture_info(L) as stream:
            out = getattr(trainer, method)(module)
        # (after predict, Lightning's predict_dataloaders is None, ember's the loader used: not compared here)
        loaders = getattr(trainer, {"validate": "val_dataloaders"}.get(method, f"{method}_dataloaders"))
        return {
            "said": _finder_lines(stream, root),
            "optimal": finder.optimal_batch_size,
            "attribute": module.batch_size,
            "loader": loaders.batch_size if method != "predict" else None,
            "module_hooks": _module_hooks(module),
            "weights": _weights(module),
            "out": [len(batch) for batch in out] if method == "predict" else _plain(out),
        }

    return scenario


def _batch_size_finder_datamodule(L, root):
    """The size held by the datamodule given to fit (Lightning's lightning_setattr sets it there)."""

    class Data(L.LightningDataModule):
        def __init__(self):
            super().__init__()
            self.batch_size = 2

        def train_dataloader(self):
            return _loader(n=64, batch_size=self.batch_size)

        def val_dataloader(self):
            return _loader(n=16, batch_size=self.batch_size, seed=1)

    finder, data = L.callbacks.BatchSizeFinder(max_trials=3, steps_per_trial=1), Data()
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "max_epochs": 1,
            "callbacks": [finder],
            "enable_checkpointing": False,
        }
    )
    module = _net(L)()
    trainer.fit(module, datamodule=data)
    return {
        "optimal": finder.optimal_batch_size,
        "held": data.batch_size,
        "loader": trainer.train_dataloader.batch_size,
        "weights": _weights(module),
        **_counters(trainer),
    }


def _batch_size_finder_out_of_memory(mode):
    """A training step that runs out of memory above 12 samples (simulated on CPU with torch's CUDA message):
    power mode halves after the failure, binsearch bisects between the last size that fit and the first that
    did not; the fit then trains at the size found."""

    def scenario(L, root):
        def training_step(self, batch, batch_idx):
            if len(batch[0]) > 12:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
            return torch.nn.functional.mse_loss(self(batch[0]), batch[1])

        module = type("Net", (_sized_net(L),), {"training_step": training_step})()
        module.batch_size = 2
        finder = L.callbacks.BatchSizeFinder(mode=mode, steps_per_trial=1, margin=0.0)
        trainer = L.Trainer(
            **{
                **QUIET,
                "default_root_dir": str(root),
                "accelerator": "cpu",
                "max_epochs": 1,
                "callbacks": [finder],
                "enable_checkpointing": False,
            }
        )
        with _capture_info(L) as stream:
            trainer.fit(module)
        return {
            "said": _finder_lines(stream, root),
            "optimal": finder.optimal_batch_size,
            "loader": trainer.train_dataloader.batch_size,
            "weights": _weights(module),
            **_counters(trainer),
        }

    return scenario


class _FineTune:
    """Lightning's docs' FineTuneBatchSizeFinder body: no search at on_fit_start; one at epoch 0 and at each
    milestone, from on_train_epoch_start."""

    def __init__(self, milestones, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.milestones = milestones
        self.found = []

    def on_fit_start(self, *args, **kwargs):
        return

    def on_train_epoch_start(self, trainer, pl_module):
        if trainer.current_epoch in self.milestones or trainer.current_epoch == 0:
            self.scale_batch_size(trainer, pl_module)
            self.found.append((trainer.current_epoch, self.optimal_batch_size))


def _fine_tune_finder(L, milestones):
    return type("FineTuneBatchSizeFinder", (_FineTune, L.callbacks.BatchSizeFinder), {})(
        milestones, max_trials=3, steps_per_trial=2
    )


def _fine_tune_batch_size_finder(L, root):
    """The epoch-0 search from on_train_epoch_start: that epoch already trains at the size found."""
    finder = _fine_tune_finder(L, milestones=(5,))
    module, recorder = _data_hooks_net(L)(), _recorder(L)
    module.batch_size = 2
    trainer = L.Trainer(
        **{
            **QUIET,
            "default_root_dir": str(root),
            "accelerator": "cpu",
            "max_epochs": 2,
            "callbacks": [finder, recorder],
        }
    )
    trainer.fit(module)
    return {
        "found": finder.found,
        "attribute": module.batch_size,
        "loader": trainer.train_dataloader.batch_size,
        "module_hooks": _module_hooks(module),
        "callback_hooks": recorder.calls,
        "weights": _weights(module),
        **_counters(trainer),
    }


# ---------------------------------------------------------------------------
# LambdaCallback, prediction writers


def _lambda_callback(L, root):
    calls = []

    def record(name):
        return lambda *args, **kwargs: calls.append(name)

    hooks = [
        "on_fit_start",
        "on_train_start",
        "on_train_epoch_start",
        "on_train_batch_end",
        "on_validation_start",
        "on_validation_epoch_end",
        "on_train_epoch_end",
        "on_train_end",
        "on_fit_end",
        "setup",
        "teardown",
    ]
    callback = L.callbacks.LambdaCallback(**{h: record(h) for h in hooks})
    _fit(L, root, [callback], max_epochs=1, limit_train_batches=2)
    return {"calls": calls}


def _writer(interval):
    def scenario(L, root):
        seen = []

        class Writer(L.callbacks.BasePredictionWriter):
            def write_on_batch_end(
                self, trainer, module, prediction, batch_indices, batch, batch_idx, dataloader_idx
            ):
                seen.append(("batch", list(prediction.shape), batch_indices, batch_idx, dataloader_idx))

            def write_on_epoch_end(self, trainer, module, predictions, batch_indices):
                seen.append(
                    ("epoch", [[list(p.shape) for p in loader] for loader in predictions], batch_indices)
                )

        trainer = L.Trainer(
            **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "callbacks": [Writer(interval)]}
        )
        out = trainer.predict(_net(L)(), [_loader(n=20), _loader(n=12, batch_size=5)])
        return {"seen": seen, "returned": [[list(p.shape) for p in loader] for loader in out]}

    return scenario


def _writer_refused(L, root):
    return {"raised": _kind(_raised(lambda: L.callbacks.BasePredictionWriter("step")))}


def _checkpoint_last_file(L, root):
    """What last.ckpt holds when epochs are saved every other epoch and the fit ends on an unsaved one."""
    callback = L.callbacks.ModelCheckpoint(dirpath=root / "ckpt", every_n_epochs=2, save_last=True)
    _fit(L, root, [callback], max_epochs=3)
    saved = torch.load(root / "ckpt" / "last.ckpt", weights_only=False)
    return {**_kept(callback, root), "last_epoch": saved["epoch"], "last_step": saved["global_step"]}


def _checkpoint_verbose(L, root):
    """The lines a verbose ModelCheckpoint prints (Lightning: INFO on its logger, shown on stderr)."""
    callback = L.callbacks.ModelCheckpoint(dirpath=root / "ckpt", monitor="score", save_top_k=2, verbose=True)
    with _capture_info(L) as stream:
        _fit(L, root, [callback], module=_net(L, SCORES)(), max_epochs=4)
    return {
        "said": [
            line.replace(str(root), "<root>") for line in stream.getvalue().splitlines() if "Epoch" in line
        ]
    }


def _on_exception_checkpoint(L, root):
    def training_step(self, batch, batch_idx):
        if self.trainer.global_step == 5:
            raise ValueError("boom")
        return self.loss(batch)

    callback = L.callbacks.OnExceptionCheckpoint(dirpath=str(root / "exc"))
    raised = _kind(_raised(lambda: _fit(L, root, [callback], module=_net(L, training_step=training_step)())))
    files = _files(root / "exc")
    saved = torch.load(root / "exc" / files[0], weights_only=False) if files else {}
    return {
        "raised": raised,
        "files": files,
        "global_step": saved.get("global_step"),
        "epoch": saved.get("epoch"),
    }


def _accumulation_with_trainer_option(L, root):
    callback = L.callbacks.GradientAccumulationScheduler(scheduling={0: 2})
    return {"raised": _kind(_raised(lambda: _fit(L, root, [callback], accumulate_grad_batches=2)))}


def _bn_net(L):
    def __init__(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.layer = torch.nn.Sequential(
            torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(), torch.nn.Linear(8, 1)
        )

    return _net(L, __init__=__init__)


def _swa_batch_norm(L, root):
    """SWA over a model with BatchNorm: Lightning adds an epoch that recomputes the running statistics."""
    callback = L.callbacks.StochasticWeightAveraging(swa_lrs=0.02, swa_epoch_start=1)
    module = _bn_net(L)()
    trainer = _fit(L, root, [callback], module=module, max_epochs=3)
    return {"weights": _weights(module), **_counters(trainer), "max_epochs": trainer.max_epochs}


def _ema_scheduled(L, root):
    callback = L.callbacks.EMAWeightAveraging(decay=0.7, update_every_n_steps=2, update_starting_at_step=3)
    module = _bn_net(L)()
    trainer = _fit(L, root, [callback], module=module, max_epochs=2)
    return {"weights": _weights(module), "metrics": _metrics(trainer), **_counters(trainer)}


def _lr_monitor_plateau(L, root):
    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=0.05)
        plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": plateau, "monitor": "score"}}

    monitor = L.callbacks.LearningRateMonitor()
    logger = L.loggers.CSVLogger(str(root), name="logs")
    trainer = _fit(
        L,
        root,
        [monitor],
        module=_net(L, [1.0, 2.0, 3.0, 4.0], configure_optimizers=configure_optimizers)(),
        logger=logger,
        max_epochs=4,
    )
    return {
        "lrs": _plain(monitor.lrs),
        "csv": _csv_cells(Path(trainer.logger.log_dir) / "metrics.csv", ("lr",)),
    }


def _stop_and_checkpoint(L, root):
    """EarlyStopping and ModelCheckpoint together: the stopping
    epoch is still saved, in both orders of the list."""
    seen = {}
    for order in ("stop_first", "checkpoint_first"):
        stop = L.callbacks.EarlyStopping(monitor="score", patience=1)
        checkpoint = L.callbacks.ModelCheckpoint(
            dirpath=root / order, monitor="score", save_top_k=2, save_last=True
        )
        callbacks = [stop, checkpoint] if order == "stop_first" else [checkpoint, stop]
        trainer = _fit(
            L, root / f"run_{order}", callbacks, module=_net(L, [0.5, 0.4, 0.6, 0.7, 0.1])(), max_epochs=5
        )
        seen[order] = {**_kept(checkpoint, root), "stopped_epoch": stop.stopped_epoch, **_counters(trainer)}
    return seen


def _writer_no_return(L, root):
    seen = []

    class Writer(L.callbacks.BasePredictionWriter):
        def write_on_epoch_end(self, trainer, module, predictions, batch_indices):
            seen.append([[list(p.shape) for p in loader] for loader in predictions])

    trainer = L.Trainer(
        **{**QUIET, "default_root_dir": str(root), "accelerator": "cpu", "callbacks": [Writer("epoch")]}
    )
    out = trainer.predict(_net(L)(), _loader(n=20), return_predictions=False)
    return {"seen": seen, "returned": out}


#: constructor arguments each library refuses (or takes): callback name -> keyword sets
BAD_ARGUMENTS = {
    "EarlyStopping": [{"monitor": "x", "mode": "avg"}],
    "GradientAccumulationScheduler": [
        {"scheduling": {}},
        {"scheduling": {0: 0}},
        {"scheduling": {-1: 2}},
        {"scheduling": {"a": 2}},
        {"scheduling": {1: 2}},
    ],
    "StochasticWeightAveraging": [
        {"swa_lrs": -1.0},
        {"swa_lrs": 0.1, "swa_epoch_start": 0},
        {"swa_lrs": 0.1, "swa_epoch_start": 1.5},
        {"swa_lrs": 0.1, "annealing_epochs": 0},
        {"swa_lrs": [0.1, -0.1]},
    ],  # (annealing_strategy="step": ember refuses it
    # at construction, Lightning when torch's SWALR is built in the fit; a ValueError both)
    "LearningRateMonitor": [{"logging_interval": "batch"}],
    "Timer": [{"interval": "batch"}],
    "ModelPruning": [{"pruning_fn": "nope"}, {"pruning_fn": "l1_unstructured", "parameter_names": ["x"]}],
    "BackboneFinetuning": [{"unfreeze_backbone_at_epoch": -1}],
}


def _refusals(L, root):
    """For each bad argument set: what each library raises at construction ("config", "runtime" or None)."""
    return {
        name: [_kind(_raised(lambda cls=getattr(L.callbacks, name), kw=kw: cls(**kw))) for kw in arguments]
        for name, arguments in BAD_ARGUMENTS.items()
    }


def _lr_monitor_without_logger(L, root):
    return {"raised": _kind(_raised(lambda: _fit(L, root, [L.callbacks.LearningRateMonitor()])))}


def _checkpoint_default_folder(logger: str | None):
    """ModelCheckpoint without dirpath: <root>/checkpoints
    without a logger, else inside the logger's version."""

    def scenario(L, root):
        callback = L.callbacks.ModelCheckpoint(monitor="val_loss")
        loggers = {None: False, "csv": L.loggers.CSVLogger(str(root), name="logs"), "default": True}
        trainer = _fit(L, root, [callback], max_epochs=2, logger=loggers[logger])
        files = [f for f in _files(root) if f.endswith(".ckpt")]
        return {
            "dirpath": _plain(callback.dirpath, root),
            "best": _plain(callback.best_model_path, root),
            "files": files,
            "checkpoint_callback": trainer.checkpoint_callback is callback,
        }

    return scenario


def _backbone_net_with_norm(L):
    def __init__(self):
        L.LightningModule.__init__(self)
        torch.manual_seed(0)
        self.backbone = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
        self.layer = torch.nn.Linear(4, 1)

    cls = _backbone_net(L)
    cls.__init__ = __init__
    return cls


def _backbone_finetuning_options(L, root):
    callback = L.callbacks.BackboneFinetuning(
        unfreeze_backbone_at_epoch=2, train_bn=False, initial_denom_lr=5.0
    )
    module = _backbone_net_with_norm(L)()
    module.seen = []
    _fit(L, root, [callback], module=module, max_epochs=4)
    return {
        "groups": module.seen,
        "weights": _weights(module),
        "requires_grad": {n: p.requires_grad for n, p in module.named_parameters()},
        "state": _plain(callback.state_dict()),
    }


SCENARIOS = {
    # ModelCheckpoint
    "ckpt_default": _checkpoint(),
    "ckpt_min_top1": _checkpoint(monitor="val_loss"),
    "ckpt_max_top3": _checkpoint(
        SCORES, monitor="score", mode="max", save_top_k=3, fit_args={"max_epochs": 5}
    ),
    "ckpt_min_top3": _checkpoint(SCORES, monitor="score", save_top_k=3, fit_args={"max_epochs": 5}),
    "ckpt_top0_last": _checkpoint(monitor="val_loss", save_top_k=0, save_last=True),
    "ckpt_top0_no_monitor": _checkpoint(save_top_k=0),
    "ckpt_all": _checkpoint(SCORES, monitor="score", save_top_k=-1, fit_args={"max_epochs": 5}),
    "ckpt_last_true": _checkpoint(monitor="val_loss", save_last=True, filename="{epoch}-{val_loss:.4f}"),
    "ckpt_last_link": _checkpoint_link_target,
    "ckpt_every_n_train_steps": _checkpoint(every_n_train_steps=3, save_top_k=-1),
    "ckpt_every_n_train_steps_monitor": _checkpoint(
        every_n_train_steps=5, monitor="train_loss", save_top_k=2
    ),
    "ckpt_every_n_epochs": _checkpoint(every_n_epochs=2, save_top_k=-1, fit_args={"max_epochs": 5}),
    "ckpt_train_time_interval": _checkpoint(train_time_interval=timedelta(hours=1), save_last=True),
    "ckpt_filename_metrics": _checkpoint(
        monitor="val_loss", save_top_k=2, filename="{epoch}-{step}-{val_loss:.3f}"
    ),
    "ckpt_no_auto_insert": _checkpoint(
        SCORES,
        monitor="score",
        save_top_k=2,
        filename="e{epoch:02d}_s{score:.2f}",
        auto_insert_metric_name=False,
        fit_args={"max_epochs": 4},
    ),
    "ckpt_version_counter": _checkpoint(filename="const", save_top_k=-1, every_n_train_steps=4),
    "ckpt_no_version_counter": _checkpoint(
        filename="const", every_n_train_steps=4, enable_version_counter=False
    ),
    "ckpt_on_train_epoch_end": _checkpoint(
        monitor="train_epoch_loss", save_top_k=2, save_on_train_epoch_end=True
    ),
    "ckpt_monitor_train_metric": _checkpoint(monitor="train_loss", save_top_k=2),
    "ckpt_monitor_train_epoch_metric": _checkpoint(
        monitor="train_epoch_loss", save_top_k=2, filename="{epoch}-{train_epoch_loss:.4f}-{val_loss:.4f}"
    ),
    "ckpt_monitor_module_epoch_end": _checkpoint(
        monitor="from_epoch_end",
        save_top_k=1,
        mode="max",
        module_methods={"on_train_epoch_end": _log_epoch_end},
    ),
    "ckpt_monitor_train_no_val": _checkpoint(
        monitor="train_epoch_loss", save_top_k=2, fit_args={"limit_val_batches": 0}
    ),
    "ckpt_weights_only": _checkpoint(save_weights_only=True, monitor="val_loss"),
    "ckpt_monitor_missing": _checkpoint_monitor_missing,
    "ckpt_last_file": _checkpoint_last_file,
    "ckpt_verbose": _checkpoint_verbose,
    "ckpt_top1_steps_val_monitor": _checkpoint(monitor="val_loss", every_n_train_steps=3, save_last=True),
    "ckpt_val_twice_an_epoch": _checkpoint(
        monitor="val_loss", save_top_k=2, fit_args={"val_check_interval": 0.5}
    ),
    "ckpt_val_every_other_epoch": _checkpoint(
        monitor="val_loss",
        save_top_k=-1,
        save_last=True,
        fit_args={"check_val_every_n_epoch": 2, "max_epochs": 4},
    ),
    "on_exception_checkpoint": _on_exception_checkpoint,
    "ckpt_default_folder_no_logger": _checkpoint_default_folder(None),
    "ckpt_default_folder_csv_logger": _checkpoint_default_folder("csv"),
    "ckpt_default_folder_default_logger": _checkpoint_default_folder("default"),
    "ckpt_weights_only_link": _checkpoint(save_weights_only=True, save_last="link", every_n_train_steps=5),
    "ckpt_time_interval_zero": _checkpoint(
        train_time_interval=timedelta(0), save_top_k=-1, fit_args={"max_epochs": 1}
    ),
    "ckpt_steps_with_accumulation": _checkpoint(
        every_n_train_steps=2, save_top_k=-1, fit_args={"accumulate_grad_batches": 2, "max_epochs": 4}
    ),
    "ckpt_not_on_train_epoch_end": _checkpoint(
        monitor="val_loss", save_top_k=2, save_on_train_epoch_end=False
    ),
    "ckpt_with_early_stopping": _stop_and_checkpoint,
    "ckpt_saved_contents": _checkpoint_reload,
    # EarlyStopping
    "es_patience": _early_stopping([0.5, 0.4, 0.45, 0.41, 0.42, 0.43, 0.3], patience=2),
    "es_min_delta": _early_stopping([0.5, 0.45, 0.42, 0.41, 0.405, 0.3], patience=1, min_delta=0.02),
    "es_mode_max": _early_stopping([0.1, 0.2, 0.15, 0.18, 0.19, 0.5], mode="max", patience=2),
    "es_stopping_threshold": _early_stopping(
        [0.5, 0.3, 0.09, 0.05, 0.01], stopping_threshold=0.1, patience=10
    ),
    "es_divergence_threshold": _early_stopping(
        [0.5, 0.3, 2.0, 0.05, 0.01], divergence_threshold=1.5, patience=10
    ),
    "es_check_finite": _early_stopping([0.5, float("nan"), 0.1], patience=10),
    "es_check_finite_off": _early_stopping([0.5, float("nan"), 0.1, 0.2], patience=1, check_finite=False),
    "es_on_train_epoch_end": _early_stopping(
        [0.0] * 6, monitor="train_epoch_loss", patience=1, check_on_train_epoch_end=True
    ),
    "es_verbose": _early_stopping([0.5, 0.4, 0.45, 0.46, 0.3], patience=2, verbose=True),
    "es_verbose_threshold": _early_stopping([0.5, 0.3, 0.09, 0.05], stopping_threshold=0.1, verbose=True),
    "es_monitor_train_epoch_metric": _early_stopping([0.0] * 4, monitor="train_epoch_loss", patience=0),
    "es_monitor_module_epoch_end": _early_stopping(
        [0.0] * 3,
        monitor="from_epoch_end",
        mode="max",
        patience=0,
        module_methods={"on_train_epoch_end": _log_epoch_end},
    ),
    "es_strict_false_missing": _early_stopping([0.0] * 3, monitor="nope", strict=False),
    "es_strict_missing": _early_stopping_missing_strict,
    "es_val_twice_an_epoch": _early_stopping(
        [0.5, 0.4, 0.45, 0.5, 0.6], monitor="val_loss", patience=1, fit_args={"val_check_interval": 0.5}
    ),
    "es_val_every_other_epoch": _early_stopping(
        [0.5, 0.4, 0.45, 0.5, 0.6, 0.7], patience=1, fit_args={"check_val_every_n_epoch": 2}
    ),
    "es_min_epochs": _early_stopping([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], patience=1, fit_args={"min_epochs": 4}),
    # LearningRateMonitor
    "lr_monitor_epoch": _lr_monitor(_adam_named_groups, logging_interval="epoch"),
    "lr_monitor_step": _lr_monitor(
        _sgd_step_scheduler, logging_interval="step", log_momentum=True, log_weight_decay=True
    ),
    "lr_monitor_default": _lr_monitor(_adam_named_groups, log_momentum=True, log_weight_decay=True),
    "lr_monitor_no_scheduler": _lr_monitor(_plain_sgd),
    # Timer
    "timer_none": _timer(None),
    "timer_str": _timer("00:01:00:00"),
    "timer_dict": _timer({"hours": 1}),
    "timer_expired": _timer(timedelta(0)),
    "timer_expired_epoch": _timer("00:00:00:00", interval="epoch"),
    "timer_refused": _timer_duration_refused,
    # the others
    "grad_accumulation_scheduler": _grad_accumulation,
    "grad_accumulation_scheduler_with_trainer_option": _accumulation_with_trainer_option,
    "swa_batch_norm": _swa_batch_norm,
    "ema_scheduled": _ema_scheduled,
    "lr_monitor_plateau": _lr_monitor_plateau,
    "lr_monitor_manual_two_optimizers": _lr_monitor_manual,
    "swa_default": _swa(swa_lrs=0.02),
    "swa_annealing_linear": _swa(
        swa_lrs=[0.01], swa_epoch_start=2, annealing_epochs=2, annealing_strategy="linear"
    ),
    "swa_start_fraction": _swa(swa_lrs=0.03, swa_epoch_start=0.5, annealing_epochs=1),
    "ema": _ema,
    "weight_averaging": _weight_averaging,
    "backbone_finetuning": _backbone_finetuning,
    "backbone_finetuning_options": _backbone_finetuning_options,
    "pruning_l1": _pruning(pruning_fn="l1_unstructured", amount=0.5),
    "pruning_keep_params": _pruning(
        pruning_fn="l1_unstructured", amount=0.25, use_global_unstructured=False, make_pruning_permanent=False
    ),
    "pruning_random": _pruning(pruning_fn="random_unstructured", amount=0.5),
    "throughput_monitor": _throughput,
    "lr_find_exponential": _lr_find(),
    "lr_find_linear": _lr_find(mode="linear", min_lr=1e-4, max_lr=0.5),
    "lr_find_diverging": _lr_find(min_lr=1e-3, max_lr=100.0, early_stop_threshold=1.5),
    "lr_find_no_update": _lr_find(update_attr=False, early_stop_threshold=None),
    "lr_finder_callback": _lr_finder_callback,
    "scale_batch_size_power": _scale_batch_size(mode="power", max_trials=4, steps_per_trial=1),
    "scale_batch_size_max_val": _scale_batch_size(mode="power", max_trials=6, steps_per_trial=1, max_val=10),
    "scale_batch_size_binsearch_max_val": _scale_batch_size(
        mode="binsearch", max_trials=6, steps_per_trial=1, max_val=12, init_val=5
    ),
    "scale_batch_size_binsearch": _scale_batch_size(
        mode="binsearch", max_trials=5, steps_per_trial=1, init_val=3
    ),
    "batch_size_finder_callback": _batch_size_finder_callback,
    "batch_size_finder_passed_loaders": _batch_size_finder_with_passed_loaders,
    "batch_size_finder_at_fit_start": _batch_size_finder_moments(),
    "batch_size_finder_at_fit_start_binsearch": _batch_size_finder_moments(mode="binsearch", init_val=3),
    "batch_size_finder_validate": _batch_size_finder_stage("validate"),
    "batch_size_finder_test": _batch_size_finder_stage("test"),
    "batch_size_finder_predict": _batch_size_finder_stage("predict"),
    "batch_size_finder_eval_subclass": _batch_size_finder_stage("test", subclass_hook="on_test_start"),
    "batch_size_finder_fine_tune_epoch_0": _fine_tune_batch_size_finder,
    "batch_size_finder_datamodule": _batch_size_finder_datamodule,
    "batch_size_finder_out_of_memory_power": _batch_size_finder_out_of_memory("power"),
    "batch_size_finder_out_of_memory_binsearch": _batch_size_finder_out_of_memory("binsearch"),
    "lr_find_attr_name": _lr_find_attribute("my_lr", attr_name="my_lr"),
    "lr_find_learning_rate": _lr_find_attribute("learning_rate"),
    "lr_find_hparams": _lr_find_attribute("hparams"),
    "lr_find_missing_attribute": _lr_find_missing_attribute(),
    "lr_find_missing_attr_name": _lr_find_missing_attribute("my_lr"),
    "lr_find_plot": _lr_find_plot,
    "lr_finder_milestones": _lr_finder_milestones,
    "scale_batch_size_validate": _scale_batch_size_stage("validate"),
    "scale_batch_size_test": _scale_batch_size_stage("test", mode="binsearch", init_val=3),
    "scale_batch_size_predict": _scale_batch_size_stage("predict", max_trials=2),
    "scale_batch_size_missing_attribute": _scale_batch_size_missing_attribute,
    "tuner_refusals": _tuner_refusals,
    "lambda_callback": _lambda_callback,
    "writer_batch": _writer("batch"),
    "writer_epoch": _writer("epoch"),
    "writer_batch_and_epoch": _writer("batch_and_epoch"),
    "writer_refused": _writer_refused,
    "constructor_refusals": _refusals,
    "lr_monitor_without_logger": _lr_monitor_without_logger,
    "writer_no_return": _writer_no_return,
}


#: differences that remain (each fails until it is made; a strict xfail): most need a Trainer change.
KNOWN_DIVERGENCES = {}


def _cases():
    for name in SCENARIOS:
        reason = KNOWN_DIVERGENCES.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name", _cases())
def test_ember_callback_observes_what_lightnings_observes(name, tmp_path):
    scenario = SCENARIOS[name]
    theirs = scenario(pl, tmp_path / "lightning")
    ours = scenario(ember, tmp_path / "ember")
    assert ours == _ember_spelling(theirs)
