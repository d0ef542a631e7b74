"""Module: a `torch.nn.Module` that also says how to train, validate, test and predict itself.

A Module written for Lightning (`LightningModule`) runs with only its imports changed: the
method and hook names are Lightning's. `self.log` hands values to the store the Trainer
attached at run time, so this file imports nothing from `ember.trainer`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch

from ember.errors import CheckpointError, ConfigError, EmberError
from ember.hyperparameters import HyperparametersMixin, accepted_arguments

if TYPE_CHECKING:
    from ember.trainer.trainer import Trainer


class Module(HyperparametersMixin, torch.nn.Module):
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

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._trainer: Trainer | None = None
        self._metric_store: Any = None
        self._automatic_optimization = True
        self._optimizers_for_manual: list[Any] = []
        self._schedulers_for_manual: list[Any] = []
        self._manual_backward: Callable[..., None] | None = None  # lent by the Trainer's manual optimization

    # ---- properties ---------------------------------------------------------------------------
    @property
    def automatic_optimization(self) -> bool:
        return self._automatic_optimization

    @automatic_optimization.setter
    def automatic_optimization(self, value: bool) -> None:
        self._automatic_optimization = bool(value)

    @property
    def trainer(self) -> Trainer:
        if self._trainer is None:
            raise EmberError(f"{type(self).__name__} is not attached to a Trainer; call trainer.fit(model) first")
        return self._trainer

    @trainer.setter
    def trainer(self, trainer: Trainer | None) -> None:
        self._trainer = trainer

    @property
    def device(self) -> torch.device:
        for tensor in self.parameters():
            return tensor.device
        for tensor in self.buffers():
            return tensor.device
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        for tensor in self.parameters():
            return tensor.dtype
        return torch.get_default_dtype()

    @property
    def current_epoch(self) -> int:
        return self._trainer.current_epoch if self._trainer is not None else 0

    @property
    def global_step(self) -> int:
        return self._trainer.global_step if self._trainer is not None else 0

    @property
    def global_rank(self) -> int:
        return self._trainer.global_rank if self._trainer is not None else 0

    @property
    def local_rank(self) -> int:
        return self._trainer.local_rank if self._trainer is not None else 0

    # ---- steps (override these) ---------------------------------------------------------------
    def training_step(self, *args: Any, **kwargs: Any) -> Any:
        raise ConfigError(f"{type(self).__name__} has no training_step; define training_step(self, batch, batch_idx)")

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
        logger: bool = True,
        on_step: bool | None = None,
        on_epoch: bool | None = None,
        reduce_fx: str | Callable[..., Any] = "mean",
        sync_dist: bool = False,
        batch_size: int | None = None,
        enable_graph: bool = False,
        sync_dist_group: Any = None,
        add_dataloader_idx: bool = True,
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
        store = self._metric_store
        if store is not None:
            store.log(
                name, value, prog_bar=prog_bar, logger=logger, on_step=on_step, on_epoch=on_epoch,
                reduce_fx=reduce_fx, sync_dist=sync_dist, batch_size=batch_size, add_dataloader_idx=add_dataloader_idx,
            )

    def log_dict(self, dictionary: Mapping[str, Any], **kwargs: Any) -> None:
        """`self.log` for each item; torchmetrics `MetricCollection` objects work too."""
        for name, value in dictionary.items():
            self.log(name, value, **kwargs)

    def print(self, *args: Any, **kwargs: Any) -> None:
        """`print` on global rank zero only."""
        if self.global_rank == 0:
            print(*args, **kwargs)

    # ---- manual optimization ------------------------------------------------------------------
    def optimizers(self, use_pl_optimizer: bool = True) -> Any:
        """The optimizer(s) from `configure_optimizers`, for manual optimization."""
        opts = self._optimizers_for_manual
        return opts[0] if len(opts) == 1 else list(opts)

    def lr_schedulers(self) -> Any:
        scheds = self._schedulers_for_manual
        if not scheds:
            return None
        return scheds[0] if len(scheds) == 1 else list(scheds)

    def manual_backward(self, loss: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        """`loss.backward()` with the Trainer's gradient scaling (use instead of `loss.backward()`)."""
        if self._manual_backward is not None:
            self._manual_backward(loss, *args, **kwargs)
        else:
            loss.backward(*args, **kwargs)

    def toggle_optimizer(self, optimizer: Any) -> None:
        """Only `optimizer`'s parameters require grad until `untoggle_optimizer` (for GAN alternation)."""
        mine = {id(p) for group in optimizer.param_groups for p in group["params"]}
        self._toggled = {name: p.requires_grad for name, p in self.named_parameters()}
        for p in self.parameters():
            if id(p) not in mine:
                p.requires_grad_(False)

    def untoggle_optimizer(self, optimizer: Any) -> None:
        for name, p in self.named_parameters():
            p.requires_grad_(getattr(self, "_toggled", {}).get(name, p.requires_grad))

    def freeze(self) -> None:
        for p in self.parameters():
            p.requires_grad_(False)
        self.eval()

    def unfreeze(self) -> None:
        for p in self.parameters():
            p.requires_grad_(True)
        self.train()

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
    def on_validation_batch_end(self, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_test_batch_start(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_test_batch_end(self, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_predict_batch_start(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_predict_batch_end(self, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None: ...
    def on_before_backward(self, loss: torch.Tensor) -> None: ...
    def on_after_backward(self) -> None: ...
    def on_before_optimizer_step(self, optimizer: torch.optim.Optimizer) -> None: ...
    def on_before_zero_grad(self, optimizer: torch.optim.Optimizer) -> None: ...
    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None: ...
    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None: ...

    # ---- loading ------------------------------------------------------------------------------
    @classmethod
    def load_from_checkpoint(
        cls,
        checkpoint_path: str | os.PathLike[str],
        map_location: Any = None,
        strict: bool = True,
        **kwargs: Any,
    ) -> Module:
        """Build the Module from the hyperparameters saved in a checkpoint and load its weights.

        Loading never runs code from the file; tensors land on CPU unless `map_location` says
        otherwise, so a checkpoint written on a GPU opens on a laptop.
        """
        from ember.checkpoint import describe_plain_file, describe_state_dict_mismatch, load_checkpoint

        ckpt = load_checkpoint(checkpoint_path, map_location=map_location if map_location is not None else "cpu")
        plain = describe_plain_file(ckpt)
        if plain is not None:
            raise CheckpointError(
                f"{checkpoint_path} is {plain}, not an ember checkpoint; build the model yourself and load it: "
                f"model.load_state_dict(torch.load({str(checkpoint_path)!r}, weights_only=True))"
            )
        hparams = dict(ckpt.get("hyper_parameters") or {})
        hparams.update(kwargs)
        model = cls(**accepted_arguments(cls, hparams))
        state = ckpt.get("state_dict")
        if state is None:
            raise CheckpointError(f"{checkpoint_path} has no 'state_dict'; it is not a model checkpoint")
        if strict:
            problem = describe_state_dict_mismatch(model, state)
            if problem:
                saved = ckpt.get("module_class", "another model")
                raise CheckpointError(
                    f"{checkpoint_path} was saved from {saved}, which does not fit {cls.__name__}: {problem}; "
                    "load it into the class that wrote it, or pass strict=False"
                )
        model.load_state_dict(state, strict=strict)
        model.on_load_checkpoint(ckpt)
        return model
