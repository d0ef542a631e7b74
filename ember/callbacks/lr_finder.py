"""The learning-rate range test: Lightning's ``lr_find`` and its ``LearningRateFinder`` callback.

The module trains for up to ``num_training`` steps while the learning rate grows from ``min_lr`` to
``max_lr`` (exponentially or linearly), one step at a time; the smoothed loss at each step is
recorded and the search stops early once it exceeds ``early_stop_threshold`` times the best so far.
The suggestion is the learning rate where the loss falls fastest. Afterwards the module's weights
and the RNG streams are as before; with ``update_attr`` its ``lr``/``learning_rate`` is the suggestion.
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Mapping
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.callbacks.search_run import module_kept, refuse_distributed, search_trainer
from ember.callbacks.tuned_attributes import lr_attribute, set_value
from ember.errors import ConfigError
from ember.fs import atomic_write, storage_path
from ember.runtime.seed import capture_rng_state, restore_rng_state

MODES = ("linear", "exponential")
PLOT_NAME = "lr_find.png"


class LRFinder:
    """What a learning-rate search found: ``results`` {"lr": [...], "loss": [...]}, a suggestion, a plot.

    Example:
        >>> finder = LRFinder("exponential", 1e-4, 1.0, 4)
        >>> finder.results = {"lr": [1e-4, 1e-3, 2e-3, 1e-1], "loss": [2.0, 1.99, 1.0, 3.0]}
        >>> finder.suggestion(skip_begin=0, skip_end=1)  # the loss falls fastest per unit of lr at 2e-3
        0.002
    """

    def __init__(self, mode: str, lr_min: float, lr_max: float, num_training: int) -> None:
        self.mode, self.lr_min, self.lr_max, self.num_training = mode, lr_min, lr_max, num_training
        self.results: dict[str, list[float]] = {}
        self._optimal_idx: int | None = None

    def suggestion(self, skip_begin: int = 10, skip_end: int = 1) -> float | None:
        """The learning rate at the steepest fall of the loss (its most negative gradient over the
        learning rates), ignoring the first `skip_begin` and last `skip_end` points and non-finite
        losses; None (with a line saying why) when fewer than two points remain."""
        kept = slice(skip_begin, -skip_end)
        losses, lrs = torch.tensor(self.results["loss"][kept]), torch.tensor(self.results["lr"][kept])
        indices = torch.arange(len(self.results["loss"]))[kept]
        finite = torch.isfinite(losses)
        losses, lrs, indices = losses[finite], lrs[finite], indices[finite]
        if len(losses) < 2:
            print(
                "ember: no learning-rate suggestion: fewer than two loss values remain after skipping; raise "
                "num_training or give more training batches",
                file=sys.stderr,
            )
            self._optimal_idx = None
            return None
        slope = torch.gradient(losses, spacing=[lrs])[0]
        self._optimal_idx = int(indices[int(torch.argmin(slope))])
        return self.results["lr"][self._optimal_idx]

    def plot(self, suggest: bool = False, show: bool = False, ax: Any = None) -> Any:
        """The loss against the learning rate (log scale in exponential mode) as a matplotlib Figure;
        `suggest` marks the suggestion with a red dot, `show` opens it (pyplot)."""
        try:
            import matplotlib.figure  # the submodule too: `import matplotlib` alone does not load it
        except ImportError:
            raise ConfigError(
                "LRFinder.plot needs matplotlib, which is not installed; pip install 'ember[plot]' "
                "(or matplotlib)"
            ) from None
        if ax is None:
            if show:
                import matplotlib.pyplot as plt

                figure, ax = plt.subplots()
            else:  # no pyplot: no global figure, no GUI backend
                figure = matplotlib.figure.Figure()
                ax = figure.subplots()
        else:
            figure = ax.figure
        lrs, losses = self.results["lr"], self.results["loss"]
        ax.plot(lrs, losses)
        if self.mode == "exponential":
            ax.set_xscale("log")
        ax.set_xlabel("Learning rate")
        ax.set_ylabel("Loss")
        if suggest and self.suggestion() is not None and self._optimal_idx:
            ax.plot(lrs[self._optimal_idx], losses[self._optimal_idx], markersize=10, marker="o", color="red")
        if show:
            import matplotlib.pyplot as plt

            plt.show()
        return figure


class SweepLR(torch.optim.lr_scheduler.LRScheduler):
    """Step k (k >= 1) sets lr = base·(end/base)^((k+1)/n) (exponential) or base + (k+1)/n·(end − base)
    (linear); step 0 keeps the base rate."""

    def __init__(self, optimizer: torch.optim.Optimizer, end_lr: float, num_iter: int, mode: str) -> None:
        self.end_lr, self.num_iter, self.mode = end_lr, num_iter, mode
        super().__init__(optimizer)

    def get_lr(self) -> list[float | torch.Tensor]:  # torch's signature: a group's rate may be a Tensor
        if self.last_epoch <= 0:
            return list(self.base_lrs)
        fraction = (self.last_epoch + 1) / self.num_iter
        if self.mode == "linear":
            return [base + fraction * (self.end_lr - base) for base in self.base_lrs]
        return [base * (self.end_lr / base) ** fraction for base in self.base_lrs]


class LossRecorder(Callback):
    """Records the learning rate before each optimizer step and the smoothed loss after it; stops the
    search once the loss diverges."""

    def __init__(self, early_stop_threshold: float | None, beta: float = 0.98) -> None:
        self.early_stop_threshold, self.beta = early_stop_threshold, beta
        self.lrs: list[float] = []
        self.losses: list[float] = []
        self.average = self.best = 0.0

    def _window_end(self, trainer: Any, batch_idx: int) -> bool:
        return (batch_idx + 1) % trainer.accumulate_grad_batches == 0

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int) -> None:
        if self._window_end(trainer, batch_idx):
            self.lrs.append(trainer.optimizers[0].param_groups[0]["lr"])

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if not self._window_end(trainer, batch_idx):
            return
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is None:  # training_step returned None: the step was skipped
            self.losses.append(math.nan)
            return
        step = trainer.global_step
        value = loss.item() if isinstance(loss, torch.Tensor) else float(loss)
        self.average = self.beta * self.average + (1 - self.beta) * value
        smoothed = self.average / (1 - self.beta ** (step + 1))  # bias-corrected running mean
        if (
            self.early_stop_threshold is not None
            and step > 1
            and smoothed > self.early_stop_threshold * self.best
        ):
            trainer.should_stop = True
        if smoothed < self.best or step == 1:
            self.best = smoothed
        self.losses.append(smoothed)


def lr_find(
    trainer: Any,
    module: Any,
    train_dataloaders: Any = None,
    val_dataloaders: Any = None,
    datamodule: Any = None,
    min_lr: float = 1e-8,
    max_lr: float = 1.0,
    num_training: int = 100,
    mode: str = "exponential",
    early_stop_threshold: float | None = 4.0,
    update_attr: bool = False,
    attr_name: str = "",
    in_run: bool = False,
) -> LRFinder | None:
    """Run the range test for `module` with `trainer`'s device and numerics (see the module docstring).
    `in_run`: called from inside `trainer`'s running fit (the callback), whose module hooks ran already."""
    mode = check_mode(mode)
    if trainer.fast_dev_run:
        warnings.warn(
            "Skipping learning rate finder since `fast_dev_run` is enabled.", UserWarning, stacklevel=2
        )
        return None
    refuse_distributed(trainer, "the learning-rate finder")
    attr = lr_attribute(module, attr_name) if update_attr else ""
    finder, recorder = LRFinder(mode, min_lr, max_lr, num_training), LossRecorder(early_stop_threshold)
    rng = capture_rng_state()
    try:
        with module_kept(module, in_run) as root, sweeping(module, min_lr, max_lr, num_training, mode):
            search = search_trainer(
                trainer, root, max_steps=num_training, limit_val_batches=num_training, callbacks=[recorder]
            )
            search.fit(module, train_dataloaders, val_dataloaders, datamodule=datamodule)
    finally:
        restore_rng_state(rng)
    finder.results = {"lr": recorder.lrs, "loss": recorder.losses}
    if len(recorder.lrs) < num_training:  # Lightning's words for the same event (its INFO lines go to stderr)
        print(
            f"LR finder stopped early after {len(recorder.lrs)} steps due to diverging loss.", file=sys.stderr
        )
    if update_attr:
        lr = finder.suggestion()
        if lr is not None:
            set_value(module, attr, lr, datamodule)
            print(f"Learning rate set to {lr}", file=sys.stderr)
            for optimizer in trainer.optimizers:  # a fit in progress goes on with it (the callback)
                for group in optimizer.param_groups:
                    group["lr"] = lr
    return finder


class sweeping:  # noqa: N801 - used as a context manager, like contextlib's
    """While active, the module's configure_optimizers returns its one optimizer at `min_lr` with the
    sweeping scheduler instead of its own schedulers."""

    def __init__(self, module: Any, min_lr: float, max_lr: float, num_training: int, mode: str) -> None:
        self.module, self.args = module, (min_lr, max_lr, num_training, mode)

    def __enter__(self) -> None:
        module, (min_lr, max_lr, num_training, mode) = self.module, self.args
        own = module.configure_optimizers

        def configure_optimizers() -> dict[str, Any]:
            optimizers = optimizers_in(own())
            if len(optimizers) != 1:
                raise ConfigError(
                    f"{type(module).__name__}.configure_optimizers returns {len(optimizers)} "
                    "optimizers; the learning-rate finder works with one"
                )
            optimizer = optimizers[0]
            for group in optimizer.param_groups:
                group["lr"] = group["initial_lr"] = min_lr
            scheduler = SweepLR(optimizer, max_lr, num_training, mode)
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}

        module.configure_optimizers = configure_optimizers

    def __exit__(self, *exc: Any) -> None:
        del self.module.configure_optimizers


def optimizers_in(result: Any) -> list[torch.optim.Optimizer]:
    """The optimizers in what `configure_optimizers` returned, whatever Lightning shape it has (the search
    needs only them; the Trainer reads the whole shape, and the callbacks sit below it).

    >>> sgd = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    >>> scheduler = torch.optim.lr_scheduler.StepLR(sgd, 1)
    >>> shapes = (sgd, [sgd], ([sgd], [scheduler]), {"optimizer": sgd, "lr_scheduler": scheduler})
    >>> [len(optimizers_in(r)) for r in shapes]
    [1, 1, 1, 1]
    """
    if isinstance(result, torch.optim.Optimizer):
        return [result]
    if isinstance(result, Mapping):
        return optimizers_in(result.get("optimizer"))
    if isinstance(result, (list, tuple)):
        return [opt for item in result for opt in optimizers_in(item)]
    return []


def check_mode(mode: str) -> str:
    if not isinstance(mode, str) or mode.lower() not in MODES:
        raise ConfigError(f"mode={mode!r} for the learning-rate finder; use 'exponential' or 'linear'")
    return mode.lower()


class LearningRateFinder(Callback):
    """Lightning's ``LearningRateFinder``: runs the range test at fit start, sets the module's learning
    rate (and the optimizers') to the suggestion. ``optimal_lr`` holds the LRFinder. ember's own option
    ``save_plot=True`` also saves the curve as ``lr_find.png`` in the run folder (matplotlib installed);
    by default, as Lightning's, no file is written.

    Lightning searches inside the running fit loop; ember runs the search as a short fit of its own
    (ember/callbacks/search_run.py) that calls only the module's training-loop hooks (not ``setup``,
    ``on_fit_start``, ``teardown``: they ran for the fit), and its optimizer starts fresh (at fit start, as
    Lightning's does; when a subclass calls ``lr_find`` later in a fit, as in Lightning's docs, Lightning's
    search continues the optimizer's state, ember's not).

    Example:
        >>> trainer = Trainer(callbacks=[LearningRateFinder(num_training_steps=50)])  # doctest: +SKIP
    """

    SUPPORTED_MODES = MODES

    def __init__(
        self,
        min_lr: float = 1e-8,
        max_lr: float = 1,
        num_training_steps: int = 100,
        mode: str = "exponential",
        early_stop_threshold: float | None = 4.0,
        update_attr: bool = True,
        attr_name: str = "",
        *,
        save_plot: bool = False,
    ) -> None:
        self._mode = check_mode(mode)
        self._save_plot = save_plot
        self._min_lr, self._max_lr, self._num_training_steps = min_lr, max_lr, num_training_steps
        self._early_stop_threshold, self._update_attr, self._attr_name = (
            early_stop_threshold,
            update_attr,
            attr_name,
        )
        self._data: dict[str, Any] = {}  # what the Tuner passes (the callback reads the fit's own)
        self.optimal_lr: LRFinder | None = None

    def lr_find(self, trainer: Any, module: Any) -> None:
        if not self._data:
            trainer.fit_loop.setup_data()  # Lightning's search runs the fit loop, which fetches the data here
        data = self._data or {
            "train_dataloaders": trainer.train_dataloader,
            "val_dataloaders": trainer.val_dataloaders,
            "datamodule": trainer.datamodule,
        }
        self.optimal_lr = lr_find(
            trainer,
            module,
            **data,
            min_lr=self._min_lr,
            max_lr=self._max_lr,
            num_training=self._num_training_steps,
            mode=self._mode,
            early_stop_threshold=self._early_stop_threshold,
            update_attr=self._update_attr,
            attr_name=self._attr_name,
            in_run=not self._data,
        )
        if self._save_plot and self.optimal_lr is not None and not self._data and trainer.is_global_zero:
            save_plot(self.optimal_lr, trainer.log_dir)

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        self.lr_find(trainer, module)


def save_plot(finder: LRFinder, folder: str) -> None:
    """`folder`/lr_find.png with the suggestion marked, when matplotlib is installed (else nothing)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    figure = finder.plot(suggest=True)
    with atomic_write(storage_path(folder) / PLOT_NAME) as f:
        figure.savefig(f, format="png")
