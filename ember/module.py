"""Module: a `torch.nn.Module` that also says how to train, validate, test and predict itself.

A Module written for Lightning (`LightningModule`) runs with only its imports changed: the
method and hook names are Lightning's. `self.log` hands values to the store the Trainer
attached at run time, so this file imports nothing from `ember.trainer`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

from ember.batch_transfer import BatchTransferHooks
from ember.errors import CheckpointError, ConfigError, NotAttachedError
from ember.fs import written_by
from ember.hyperparameters import HyperparametersMixin, accepted_arguments, class_only
from ember.runtime.devices import move_to_device

if TYPE_CHECKING:
    from ember.trainer.trainer import Trainer


class LogOptions(NamedTuple):
    """What `Module.log` hands the metric store with each value: its arguments that change where and how the
    value is kept (the others are Lightning's, accepted and unused). The one list of them: `Module.log`'s
    signature is Lightning's; the store reads this tuple instead of repeating the signature."""

    prog_bar: bool
    logger: bool | None
    on_step: bool | None
    on_epoch: bool | None
    reduce_fx: str | Callable[..., Any]
    sync_dist: bool
    batch_size: int | None
    add_dataloader_idx: bool


@dataclasses.dataclass(eq=False)
class RunLink:
    """What a Trainer lends the Module it runs, and the only part of a Module the Trainer writes.

    `Module.attach(trainer)` returns it; the Trainer then sets what it lends: `metric_store`, where
    `self.log` goes in the current hook (the Reporter; hooks.py while a batch-transfer hook runs);
    `optimizers` and `schedulers`, what `self.optimizers()` and `self.lr_schedulers()` return, and
    `manual_backward`, the Trainer's scaled backward under manual optimization (build.py).
    """

    trainer: Trainer | None = None
    metric_store: Any = None  # a MetricStore, a RefusedLog (where Lightning refuses self.log), or None
    optimizers: list[Any] = dataclasses.field(default_factory=list)
    schedulers: list[Any] = dataclasses.field(default_factory=list)
    manual_backward: Callable[..., None] | None = None


class Module(BatchTransferHooks, HyperparametersMixin, torch.nn.Module):
    """The model and its training logic in one `torch.nn.Module`.

    Example:
        >>> import torch, ember
        >>> class Regressor(ember.Module):
        ...     def __init__(self, lr=0.1):
        ...         super().__init__()
        ...         self.save_hyperparameters()
        ...         self.layer = torch.nn.Linear(3, 1)
        ...     def training_step(self, batch, batch_idx):
        ...         x, y = batch
        ...         loss = torch.nn.functional.mse_loss(self.layer(x), y)
        ...         self.log("train_loss", loss)
        ...         return loss
        ...     def configure_optimizers(self):
        ...         return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        >>> Regressor().hparams.lr
        0.1
    """

    #: Properties TorchScript must not compile (to_torchscript): they read the Trainer, not the model.
    __jit_unused_properties__: list[str] = [
        "automatic_optimization",
        "trainer",
        "run_link",
        "logger",
        "loggers",
        "example_input_array",
        "device",
        "dtype",
        "current_epoch",
        "global_step",
        "global_rank",
        "local_rank",
        "hparams",
        "hparams_initial",
        "strict_loading",
        "device_mesh",
    ]

    #: Attributes TorchScript must not compile: what the Trainer lends (a Python object, not the model's).
    __jit_ignored_attributes__: list[str] = ["_link"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._link = RunLink()  # what a Trainer lends this module: see `attach`
        self._automatic_optimization = True
        self._example_input_array: Any = None
        self._jit_is_scripting = False
        self._param_requires_grad_state: dict[torch.nn.Parameter, bool] = {}
        self._strict_loading: bool | None = None

    # ---- properties ---------------------------------------------------------------------------
    @property
    def strict_loading(self) -> bool:
        """Whether resuming (`fit(ckpt_path=...)`) and `load_from_checkpoint` without `strict=` refuse a
        checkpoint whose weights' names differ from the module's (Lightning's attribute; default True).

        Example:
            >>> net = Module()
            >>> net.strict_loading
            True
            >>> net.strict_loading = False
            >>> net.strict_loading
            False
        """
        return self._strict_loading in (None, True)

    @strict_loading.setter
    def strict_loading(self, value: bool) -> None:
        self._strict_loading = value

    @property
    def automatic_optimization(self) -> bool:
        return self._automatic_optimization

    @automatic_optimization.setter
    def automatic_optimization(self, value: bool) -> None:
        self._automatic_optimization = bool(value)

    @property
    def trainer(self) -> Trainer:
        if self._link.trainer is None and not self._jit_is_scripting:  # TorchScript reads every attribute
            raise NotAttachedError(
                f"{type(self).__name__} is not attached to a Trainer; call trainer.fit(model) first"
            )
        return self._link.trainer  # type: ignore[return-value]  # None only while TorchScript scripts

    @trainer.setter
    def trainer(self, trainer: Trainer | None) -> None:
        self._link.trainer = trainer  # Lightning's `model.trainer = trainer`

    def attach(self, trainer: Trainer | None) -> RunLink:
        """Attach this module to `trainer` (None: detach) and return its `RunLink`: the Trainer's one way
        into the module. The Trainer keeps the link and changes what it lends through it (where `self.log`
        goes, the optimizers `self.optimizers()` returns, manual_backward's scaling); it never writes the
        module's own attributes.

        Example:
            >>> net = Module()
            >>> link = net.attach(None)
            >>> link.optimizers = ["sgd"]
            >>> net.optimizers(), link is net.run_link
            ('sgd', True)
        """
        self._link.trainer = trainer
        return self._link

    @property
    def run_link(self) -> RunLink:
        """What the attached Trainer lends this module (see `attach`)."""
        return self._link

    @property
    def device_mesh(self) -> Any:
        """ModelParallelStrategy's 2-D `DeviceMesh` ("data_parallel", "tensor_parallel"), to parallelize
        the model with in `configure_model`; None under any other strategy or without a Trainer
        (Lightning's)."""
        return self._link.trainer.strategy.device_mesh if self._link.trainer is not None else None

    @property
    def logger(self) -> Any:
        """The Trainer's first logger (None without a Trainer or with logger=False), as in Lightning."""
        return self._link.trainer.logger if self._link.trainer is not None else None

    @property
    def loggers(self) -> list[Any]:
        """Every logger of the Trainer ([] without a Trainer)."""
        return list(self._link.trainer.loggers) if self._link.trainer is not None else []

    @property
    def example_input_array(self) -> Any:
        """An example input (a tensor, a tuple of positional inputs or a dict of keyword inputs) for
        `forward`: ModelSummary uses it to show each layer's input and output sizes."""
        return self._example_input_array

    @example_input_array.setter
    def example_input_array(self, example: Any) -> None:
        self._example_input_array = example

    @property
    def device(self) -> torch.device:
        for tensor in self.parameters():
            return tensor.device
        for buffer in self.buffers():
            return buffer.device
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        for tensor in self.parameters():
            return tensor.dtype
        return torch.get_default_dtype()

    @property
    def current_epoch(self) -> int:
        return self._link.trainer.current_epoch if self._link.trainer is not None else 0

    @property
    def global_step(self) -> int:
        return self._link.trainer.global_step if self._link.trainer is not None else 0

    @property
    def global_rank(self) -> int:
        return self._link.trainer.global_rank if self._link.trainer is not None else 0

    @property
    def local_rank(self) -> int:
        return self._link.trainer.local_rank if self._link.trainer is not None else 0

    # ---- steps (override these) ---------------------------------------------------------------
    def training_step(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError(
            f"{type(self).__name__} has no training_step; define training_step(self, batch, batch_idx)"
        )

    def validation_step(self, *args: Any, **kwargs: Any) -> Any:
        return None

    def test_step(self, *args: Any, **kwargs: Any) -> Any:
        return None

    def predict_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> Any:
        """By default, the forward pass on the whole batch (or on its first element if it is a pair)."""
        if isinstance(batch, (list, tuple)) and len(batch) == 2:
            batch = batch[0]
        return self(batch)

    def configure_optimizers(self) -> Any:
        raise ConfigError(
            f"{type(self).__name__} has no configure_optimizers; define it to return an optimizer, e.g. "
            "torch.optim.SGD(self.parameters(), lr=0.01)"
        )

    def configure_callbacks(self) -> Any:
        return []

    # ---- logging ------------------------------------------------------------------------------
    def log(
        self,
        name: str,
        value: Any,
        prog_bar: bool = False,
        logger: bool | None = None,
        on_step: bool | None = None,
        on_epoch: bool | None = None,
        reduce_fx: str | Callable[..., Any] = "mean",
        enable_graph: bool = False,
        sync_dist: bool = False,
        sync_dist_group: Any = None,
        add_dataloader_idx: bool = True,
        batch_size: int | None = None,
        metric_attribute: str | None = None,
        rank_zero_only: bool = False,
    ) -> None:
        """Log a scalar (tensor, number or torchmetrics Metric) for loggers, callbacks and the progress bar.

        Defaults follow Lightning: in `training_step` values are logged per step; in validation
        and test, their mean over the epoch. Values stay on the device until a flush point.
        The last five arguments are Lightning's, accepted so its modules run unchanged; ember has no
        use for them (values are always detached, logged by rank zero, from one dataloader). Any other
        name is a TypeError, so a typo such as `on_epcoh=True` is not silently ignored.
        """
        if self._link.trainer is not None and getattr(self._link.trainer, "barebones", False):
            # Lightning: under barebones self.log is a no-op with a warning, so callback_metrics and the
            # evaluation results stay empty
            if getattr(
                self._link.trainer, "is_global_zero", True
            ):  # one warning, from rank 0 (rank_zero_warn's rule)
                warnings.warn(
                    f"self.log({name!r}) under Trainer(barebones=True): logging is off in barebones mode "
                    "(it measures raw speed); the value is not recorded",
                    stacklevel=2,
                )
            return
        store = self._link.metric_store
        if store is not None:
            options = LogOptions(
                prog_bar, logger, on_step, on_epoch, reduce_fx, sync_dist, batch_size, add_dataloader_idx
            )
            store.log(name, value, options)

    def log_dict(
        self,
        dictionary: Mapping[str, Any],
        prog_bar: bool = False,
        logger: bool | None = None,
        on_step: bool | None = None,
        on_epoch: bool | None = None,
        reduce_fx: str | Callable[..., Any] = "mean",
        enable_graph: bool = False,
        sync_dist: bool = False,
        sync_dist_group: Any = None,
        add_dataloader_idx: bool = True,
        batch_size: int | None = None,
        rank_zero_only: bool = False,
    ) -> None:
        """`self.log` for each item, with Lightning's arguments in Lightning's order; torchmetrics
        `MetricCollection` objects work too."""
        options = dict(locals())  # every argument but the dictionary goes to self.log as given
        del options["self"], options["dictionary"]
        if logger is None:  # None: log's own default
            del options["logger"]
        for name, value in dictionary.items():
            self.log(name, value, **options)

    def print(self, *args: Any, **kwargs: Any) -> None:
        """`print` on global rank zero only."""
        if self.global_rank == 0:
            print(*args, **kwargs)

    # ---- manual optimization ------------------------------------------------------------------
    def optimizers(self, use_pl_optimizer: bool = True) -> Any:
        """The optimizer(s) from `configure_optimizers` (for manual optimization; under automatic
        optimization too, e.g. to read the learning rate, as in Lightning)."""
        opts = self._link.optimizers
        return opts[0] if len(opts) == 1 else list(opts)

    def lr_schedulers(self) -> Any:
        scheds = self._link.schedulers
        if not scheds:
            return None
        return scheds[0] if len(scheds) == 1 else list(scheds)

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """`loss.backward()` with the Trainer's gradient scaling (use instead of `loss.backward()`)."""
        if self._link.manual_backward is not None:
            self._link.manual_backward(loss, *args, **kwargs)
        else:
            loss.backward(*args, **kwargs)

    def toggle_optimizer(self, optimizer: Any) -> None:
        """Only `optimizer`'s parameters require grad until `untoggle_optimizer` (GAN alternation): every
        other optimizer's parameters are frozen; the flags each had are remembered and put back.

        >>> import torch, ember
        >>> m = ember.Module(); m.a, m.b = torch.nn.Linear(1, 1), torch.nn.Linear(1, 1)
        >>> link = m.attach(None)
        >>> link.optimizers = [torch.optim.SGD(m.a.parameters()), torch.optim.SGD(m.b.parameters())]
        >>> m.toggle_optimizer(link.optimizers[0]); m.b.weight.requires_grad, m.a.weight.requires_grad
        (False, True)
        >>> m.untoggle_optimizer(link.optimizers[0]); m.b.weight.requires_grad
        True
        """
        state: dict[torch.nn.Parameter, bool] = {}
        for opt in self._all_optimizers(optimizer):
            for group in opt.param_groups:
                for param in group["params"]:
                    if param not in state:
                        state[param] = param.requires_grad
                        param.requires_grad = False
        for group in _unwrapped(optimizer).param_groups:
            for param in group["params"]:
                param.requires_grad = state[param]
        self._param_requires_grad_state = state

    def untoggle_optimizer(self, optimizer: Any) -> None:
        """Put back the `requires_grad` flags `toggle_optimizer` changed."""
        mine = _unwrapped(optimizer)
        for opt in self._all_optimizers(optimizer):
            if opt is not mine:
                for group in opt.param_groups:
                    for param in group["params"]:
                        if param in self._param_requires_grad_state:
                            param.requires_grad = self._param_requires_grad_state[param]
        self._param_requires_grad_state = {}

    @contextlib.contextmanager
    def toggled_optimizer(self, optimizer: Any) -> Iterator[None]:
        """`toggle_optimizer` for the body of a `with` block, `untoggle_optimizer` after it."""
        self.toggle_optimizer(optimizer)
        try:
            yield
        finally:
            self.untoggle_optimizer(optimizer)

    def _all_optimizers(self, optimizer: Any) -> list[torch.optim.Optimizer]:
        found = [_unwrapped(o) for o in self._link.optimizers]
        return found if found else [_unwrapped(optimizer)]

    def clip_gradients(
        self,
        optimizer: Any,
        gradient_clip_val: float | None = None,
        gradient_clip_algorithm: str | None = None,
    ) -> None:
        """Clip the gradients of `optimizer`'s parameters, by norm (default) or by value; None means the
        Trainer's setting. In manual optimization call it in training_step between `manual_backward` and
        `step`.

        >>> import torch, ember
        >>> m = ember.Module(); m.w = torch.nn.Parameter(torch.ones(2)); m.w.grad = torch.tensor([3.0, 4.0])
        >>> m.clip_gradients(torch.optim.SGD([m.w]), gradient_clip_val=1.0); m.w.grad
        tensor([0.6000, 0.8000])
        """
        trainer_val = getattr(self._link.trainer, "gradient_clip_val", None)
        if gradient_clip_val is None:
            gradient_clip_val = trainer_val or 0.0
        elif trainer_val is not None and trainer_val != gradient_clip_val:
            raise ConfigError(
                f"Trainer(gradient_clip_val={trainer_val!r}) and "
                f"clip_gradients(gradient_clip_val={gradient_clip_val!r}) "
                "disagree; set only one of them"
            )
        algorithm = (
            gradient_clip_algorithm or getattr(self._link.trainer, "gradient_clip_algorithm", None) or "norm"
        ).lower()
        if isinstance(gradient_clip_val, bool) or not isinstance(gradient_clip_val, (int, float)):
            raise ConfigError(f"gradient_clip_val must be an int or a float; got {gradient_clip_val!r}")
        if algorithm not in ("norm", "value"):
            raise ConfigError(f"gradient_clip_algorithm={algorithm!r} must be 'norm' or 'value'")
        if gradient_clip_val > 0:
            clip_parameters(_unwrapped(optimizer), gradient_clip_val, algorithm)

    def freeze(self) -> Module:
        """Every parameter stops requiring grad, and the Module goes to eval mode (for inference)."""
        for p in self.parameters():
            p.requires_grad_(False)
        return self.eval()

    def unfreeze(self) -> Module:
        """Every parameter requires grad again, and the Module goes back to train mode."""
        for p in self.parameters():
            p.requires_grad_(True)
        return self.train()

    # ---- collectives and export ---------------------------------------------------------------
    def all_gather(self, data: Any, group: Any = None, sync_grads: bool = False) -> Any:
        """Gather a tensor (or a dict/list/tuple of them; numbers become tensors) from every process: under
        DDP each result gains a leading dimension of size world_size; in one process the data comes back as
        is. `sync_grads=True` lets gradients flow back through the gather."""
        if isinstance(data, Mapping):
            return type(data)({k: self.all_gather(v, group, sync_grads) for k, v in data.items()})  # type: ignore[call-arg]
        if isinstance(data, (list, tuple)):
            return type(data)(self.all_gather(v, group, sync_grads) for v in data)
        tensor = data if isinstance(data, torch.Tensor) else torch.as_tensor(data, device=self.device)
        trainer = self._link.trainer
        if trainer is None or trainer.world_size == 1:
            return tensor
        if sync_grads:
            import torch.distributed.nn.functional as distributed_functional

            return torch.stack(
                distributed_functional.all_gather(tensor, group=group or torch.distributed.group.WORLD)
            )
        if group is not None:
            parts = [torch.empty_like(tensor) for _ in range(torch.distributed.get_world_size(group))]
            torch.distributed.all_gather(parts, tensor.contiguous(), group=group)
            return torch.stack(parts)
        return trainer.strategy.all_gather(tensor)

    def to_torchscript(
        self,
        file_path: str | os.PathLike[str] | None = None,
        method: str = "script",
        example_inputs: Any = None,
        **kwargs: Any,
    ) -> Any:
        """The Module compiled by TorchScript (`method="script"`, or `"trace"` with `example_inputs` or
        `example_input_array`), in eval mode, saved to `file_path` when given; the Module's mode is kept."""
        mode = self.training
        self._jit_is_scripting = True
        try:
            if method == "script":
                with torch.no_grad():
                    scripted = torch.jit.script(self.eval(), **kwargs)
            elif method == "trace":
                example = example_inputs if example_inputs is not None else self.example_input_array
                if example is None:
                    raise ConfigError(
                        "to_torchscript(method='trace') needs example_inputs, or set self.example_input_array"
                    )
                example = _to_device(example, self.device)
                with torch.no_grad():
                    scripted = torch.jit.trace(self.eval(), example_inputs=example, **kwargs)
            else:
                raise ConfigError(f"to_torchscript(method={method!r}): use 'script' or 'trace'")
        finally:
            self._jit_is_scripting = False
            self.train(mode)
        if file_path is not None:
            with written_by(file_path) as scratch:  # never through a link planted at file_path
                torch.jit.save(scripted, os.fspath(scratch))
        return scripted

    def to_onnx(self, file_path: str | os.PathLike[str], input_sample: Any = None, **kwargs: Any) -> Any:
        """Export the Module to ONNX at `file_path` (needs the `onnx` package), from `input_sample` or
        `example_input_array`; `kwargs` go to `torch.onnx.export`."""
        import importlib.util

        if importlib.util.find_spec("onnx") is None:
            raise ConfigError("to_onnx needs the onnx package; pip install onnx (or use to_torchscript)")
        sample = input_sample if input_sample is not None else self.example_input_array
        if sample is None:
            raise ConfigError("to_onnx needs input_sample, or set self.example_input_array")
        sample = _to_device(sample, self.device)
        mode = self.training
        try:
            self.eval()
            if not isinstance(file_path, (str, os.PathLike)):  # a file object the caller opened
                return torch.onnx.export(
                    self, sample if isinstance(sample, tuple) else (sample,), file_path, **kwargs
                )
            with written_by(file_path) as scratch:  # never through a link planted at file_path
                return torch.onnx.export(
                    self, sample if isinstance(sample, tuple) else (sample,), os.fspath(scratch), **kwargs
                )
        finally:
            self.train(mode)

    # ---- hooks (override any; the order is in docs/hooks.md) ----------------------------------
    def setup(self, stage: str) -> None: ...
    def teardown(self, stage: str) -> None: ...
    def prepare_data(self) -> None: ...
    def on_fit_start(self) -> None: ...
    def on_fit_end(self) -> None: ...
    def on_train_start(self) -> None: ...
    def on_train_end(self) -> None: ...
    def on_validation_start(self) -> None: ...
    def on_validation_end(self) -> None: ...
    def on_test_start(self) -> None: ...
    def on_test_end(self) -> None: ...
    def on_predict_start(self) -> None: ...
    def on_predict_end(self) -> None: ...
    def on_train_epoch_start(self) -> None: ...
    def on_train_epoch_end(self) -> None: ...
    def on_validation_epoch_start(self) -> None: ...
    def on_validation_epoch_end(self) -> None: ...
    def on_test_epoch_start(self) -> None: ...
    def on_test_epoch_end(self) -> None: ...
    def on_predict_epoch_start(self) -> None: ...
    def on_predict_epoch_end(self) -> None: ...
    def on_train_batch_start(self, batch: Any, batch_idx: int) -> None: ...
    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None: ...
    def on_validation_batch_start(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_validation_batch_end(
        self, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None: ...
    def on_test_batch_start(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_test_batch_end(
        self, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None: ...
    def on_predict_batch_start(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_predict_batch_end(
        self, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None: ...
    def on_before_backward(self, loss: torch.Tensor) -> None: ...
    def on_after_backward(self) -> None: ...
    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None: ...
    def on_before_zero_grad(self, optimizer: torch.optim.Optimizer) -> None: ...
    def configure_model(self) -> None:
        """Build layers here to create them in the strategy's context (called at the start of fit,
        validate, test and predict, so it must do nothing when the layers exist already)."""

    def on_validation_model_eval(self) -> None:
        self.eval()

    def on_validation_model_train(self) -> None:
        self.train()

    def on_validation_model_zero_grad(self) -> None:
        self.zero_grad(set_to_none=True)

    def on_test_model_eval(self) -> None:
        self.eval()

    def on_test_model_train(self) -> None:
        self.train()

    def on_predict_model_eval(self) -> None:
        self.eval()

    # ---- the automatic optimization step (Lightning's hooks; override to change one part) ------
    def backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """Back-propagate the loss of training_step (divided by accumulate_grad_batches when accumulating)."""
        loss.backward(*args, **kwargs)

    def optimizer_step(
        self, epoch: int, batch_idx: int, optimizer: Any, optimizer_closure: Any = None
    ) -> None:
        """Step the optimizer once per accumulation window. `optimizer_closure` runs training_step, zero_grad
        and backward and must be called: `optimizer.step(closure=optimizer_closure)` steps; calling only
        `optimizer_closure()` skips the step. Learning-rate warm-up goes here too:

            def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
                optimizer.step(closure=optimizer_closure)
                if self.trainer.global_step < 100:
                    for group in optimizer.param_groups:
                        group["lr"] = 0.1 * (self.trainer.global_step + 1) / 100
        """
        optimizer.step(closure=optimizer_closure)

    def optimizer_zero_grad(self, epoch: int, batch_idx: int, optimizer: torch.optim.Optimizer) -> None:
        optimizer.zero_grad()

    def configure_gradient_clipping(
        self,
        optimizer: torch.optim.Optimizer,
        gradient_clip_val: float | None = None,
        gradient_clip_algorithm: str | None = None,
    ) -> None:
        """Called before each optimizer step with the Trainer's clipping settings; by default
        `clip_gradients`."""
        self.clip_gradients(
            optimizer, gradient_clip_val=gradient_clip_val, gradient_clip_algorithm=gradient_clip_algorithm
        )

    def lr_scheduler_step(self, scheduler: Any, metric: Any) -> None:
        """Step one scheduler at its interval; `metric` is the monitored value (ReduceLROnPlateau) or None."""
        if metric is None:
            scheduler.step()
        else:
            scheduler.step(metric)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None: ...
    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None: ...

    # ---- loading ------------------------------------------------------------------------------
    @class_only
    def load_from_checkpoint(
        cls,
        checkpoint_path: str | os.PathLike[str],
        map_location: Any = None,
        hparams_file: str | os.PathLike[str] | None = None,
        strict: bool | None = None,
        weights_only: bool | None = None,
        **kwargs: Any,
    ) -> Module:
        """Build the Module from the hyperparameters saved in a checkpoint and load its weights.

        Loading never runs code from the file; tensors land on CPU unless `map_location` says
        otherwise, so a checkpoint written on a GPU opens on a laptop. `strict=None` (the default)
        follows the built module's `strict_loading` (True unless its `__init__` sets it), as in Lightning.
        `hparams_file` (a .yaml, e.g. a logger's hparams.yaml) replaces the checkpoint's hyperparameters;
        `**kwargs` override either. `weights_only=False` is refused: ember never unpickles code from a file.
        """
        from ember.checkpoint import describe_plain_file, describe_state_dict_mismatch, load_checkpoint

        if weights_only is False:
            raise ConfigError(
                "load_from_checkpoint(weights_only=False) would run code from the file; ember loads "
                "checkpoints safely only: drop weights_only (objects beyond tensors: torch.load yourself)"
            )
        ckpt = load_checkpoint(
            checkpoint_path, map_location=map_location if map_location is not None else "cpu"
        )
        plain = describe_plain_file(ckpt)
        if plain is not None:
            raise CheckpointError(
                f"{checkpoint_path} is {plain}, not an ember checkpoint; build the model yourself and load "
                "it: "
                f"model.load_state_dict(torch.load({str(checkpoint_path)!r}, weights_only=True))"
            )
        hparams = dict(ckpt.get("hyper_parameters") or {})
        if hparams_file is not None:
            hparams = _hparams_from_file(hparams_file)
            ckpt["hyper_parameters"] = hparams  # Lightning: the file overwrites the checkpoint's
        hparams.update(kwargs)
        model = cls(**accepted_arguments(cls, hparams))
        state = ckpt.get("state_dict")
        if state is None:
            raise CheckpointError(f"{checkpoint_path} has no 'state_dict'; it is not a model checkpoint")
        if strict is None:
            strict = model.strict_loading
        if strict:
            problem = describe_state_dict_mismatch(model, state)
            if problem:
                saved = ckpt.get("module_class", "another model")
                raise CheckpointError(
                    f"{checkpoint_path} was saved from {saved}, which does not fit {cls.__name__}: "
                    f"{problem}; "
                    "load it into the class that wrote it, or pass strict=False"
                )
        model.load_state_dict(state, strict=strict)
        model.on_load_checkpoint(ckpt)
        return model


def clip_parameters(optimizer: torch.optim.Optimizer, value: float, algorithm: str) -> None:
    """Clip the gradients of `optimizer`'s parameters by total norm (`"norm"`) or elementwise (`"value"`)."""
    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if algorithm == "value":
        torch.nn.utils.clip_grad_value_(params, value)
    else:
        torch.nn.utils.clip_grad_norm_(params, value)


def _unwrapped(optimizer: Any) -> torch.optim.Optimizer:
    """The torch optimizer inside what `self.optimizers()` or `optimizer_step` hands out."""
    return getattr(optimizer, "optimizer", optimizer)


def _to_device(example: Any, device: torch.device) -> Any:
    return move_to_device(example, device) if device.type != "cpu" else example


def _hparams_from_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The hyperparameters in a .yaml/.yml file (`load_from_checkpoint(hparams_file=...)`), read safely."""
    import yaml

    from ember.fs import storage_path

    if str(path).rsplit(".", 1)[-1].lower() not in ("yaml", "yml"):
        raise ConfigError(
            f"hparams_file={str(path)!r}: ember reads .yaml/.yml hyperparameter files (a logger's "
            "hparams.yaml); convert the file, or pass the values as keyword arguments"
        )
    with storage_path(path).open() as f:
        return dict(yaml.safe_load(f) or {})
