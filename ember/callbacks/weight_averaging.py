"""WeightAveraging and EMAWeightAveraging: an averaged copy of the model, updated after optimizer steps
(Lightning 2.6's callbacks, on torch's ``AveragedModel``).

How it runs, as Lightning's: ``setup`` of a fit wraps a copy of the module in ``AveragedModel`` (buffers
averaged too unless ``use_buffers=False``); after every training batch that took an optimizer step, and at
every training epoch end, ``should_update(step_idx=...)`` / ``should_update(epoch_idx=...)`` decide whether
the average takes the current weights in. Validation runs on the averaged weights (they are swapped in at
each validation epoch start and swapped back at its end), and training ends with the averaged weights
copied into the module. A checkpoint holds the averaged weights under ``state_dict`` (so a model loaded
from it is the averaged one), the module's own under ``current_model_state`` and the average's count
under ``averaging_state``; resuming a fit from it restores both models.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_avg_fn

from ember.callbacks.callback import Callback
from ember.errors import ConfigError, UnsupportedCombinationError

#: What Lightning passes on to torch's AveragedModel besides the model, device and use_buffers.
AVERAGED_MODEL_OPTIONS = ("avg_fn", "multi_avg_fn")
_PREFIX = "module."  # AveragedModel keeps the copy as `.module`: its state_dict names start with this


class WeightAveraging(Callback):
    """Average the module's weights over training steps
    (equal weights, SWA, unless ``avg_fn`` says otherwise).

    ``device`` — where the averaged copy lives (default: the module's device); ``use_buffers`` — average the
    buffers (batch-norm statistics) too; ``avg_fn`` / ``multi_avg_fn`` — as torch's ``AveragedModel``.
    Override ``should_update(step_idx=None, epoch_idx=None)`` to choose when the average is updated (the
    default: after every optimizer step).

    Example:
        >>> import torch
        >>> from ember.callbacks import WeightAveraging
        >>> class AfterEachEpoch(WeightAveraging):
        ...     def should_update(self, step_idx=None, epoch_idx=None):
        ...         return epoch_idx is not None
        >>> averaging = AfterEachEpoch(device="cpu")
        >>> averaging.should_update(step_idx=3), averaging.should_update(epoch_idx=0)
        (False, True)
        >>> WeightAveraging().should_update(step_idx=0)
        True
    """

    def __init__(
        self, device: torch.device | str | int | None = None, use_buffers: bool = True, **kwargs: Any
    ) -> None:
        unknown = sorted(set(kwargs) - set(AVERAGED_MODEL_OPTIONS))
        if unknown:
            raise ConfigError(
                f"{type(self).__name__}({', '.join(unknown)}=...): torch's AveragedModel takes "
                f"{' and '.join(AVERAGED_MODEL_OPTIONS)} only"
            )
        for name in AVERAGED_MODEL_OPTIONS:
            if kwargs.get(name) is not None and not callable(kwargs[name]):
                raise ConfigError(f"{type(self).__name__}({name}={kwargs[name]!r}) should be callable")
        self._device = torch.device(device) if isinstance(device, str) else device
        self._use_buffers = use_buffers
        self._kwargs = kwargs
        self._average_model: AveragedModel | None = None
        # optimizer steps taken when the average was last
        # updated: 0 makes the first check follow the first step
        self._latest_update_step = 0
        # the epoch after which it was last updated: -1 lets epoch 0 update at its end
        self._latest_update_epoch = -1

    def should_update(self, step_idx: int | None = None, epoch_idx: int | None = None) -> bool:
        """Whether to update the average after optimizer step `step_idx` or epoch `epoch_idx` (0-based; one is
        None). The default: after every optimizer step."""
        return step_idx is not None

    # ---- the fit ---------------------------------------------------------------------------------
    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if stage != "fit":
            return
        if type(trainer.strategy).__name__.startswith("FSDP"):
            raise UnsupportedCombinationError(
                f"{type(self).__name__} does not support sharded models (FSDP); use "
                "strategy='ddp' or remove the callback"
            )
        if _builds_layers(module):  # Lightning calls it here too, so the copy has every layer
            warnings.warn(
                f"{type(self).__name__} calls configure_model to build the layers it averages; the layers "
                "are not sharded, so a large model may run out of memory",
                stacklevel=2,
            )
            module.configure_model()
        self._average_model = AveragedModel(
            model=module, device=self._device or module.device, use_buffers=self._use_buffers, **self._kwargs
        )

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        # global_step counts optimizer steps taken (1 after the first); should_update gets a 0-based index
        step = trainer.global_step
        if step > self._latest_update_step and self.should_update(step_idx=step - 1):
            assert self._average_model is not None
            self._average_model.update_parameters(module)
            self._latest_update_step = step

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        epoch = trainer.current_epoch
        if epoch > self._latest_update_epoch and self.should_update(epoch_idx=epoch):
            assert self._average_model is not None
            self._average_model.update_parameters(module)
            self._latest_update_epoch = epoch

    def on_train_end(self, trainer: Any, module: Any) -> None:
        assert self._average_model is not None
        for average, current in _pairs(self._average_model.module, module):
            current.data.copy_(average.data)

    def on_validation_epoch_start(self, trainer: Any, module: Any) -> None:
        if self._average_model is not None:
            self._swap(module)

    def on_validation_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._average_model is not None:
            self._swap(module)

    def _swap(self, module: Any) -> None:
        """Exchange the values of the module's and the average's parameters and buffers."""
        assert self._average_model is not None
        for average, current in _pairs(self._average_model.module, module):
            kept = average.data.clone()
            average.data.copy_(current.data)
            current.data.copy_(kept)

    # ---- checkpoints (Lightning's keys) ----------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {"latest_update_step": self._latest_update_step}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._latest_update_step = state_dict["latest_update_step"]

    def on_save_checkpoint(self, trainer: Any, module: Any, checkpoint: dict[str, Any]) -> None:
        """`state_dict` becomes the averaged weights; the module's own move to `current_model_state`."""
        if self._average_model is None:  # outside a fit: the module's weights are saved as they are
            return
        average = self._average_model.state_dict()
        checkpoint["current_model_state"] = checkpoint["state_dict"]
        checkpoint["state_dict"] = {k[len(_PREFIX) :]: v for k, v in average.items() if k.startswith(_PREFIX)}
        checkpoint["averaging_state"] = {k: v for k, v in average.items() if not k.startswith(_PREFIX)}

    def on_load_checkpoint(self, trainer: Any, module: Any, checkpoint: dict[str, Any]) -> None:
        """The average from `state_dict`, the module from `current_model_state` (a checkpoint written without
        the callback starts both from `state_dict`)."""
        if self._average_model is None:
            warnings.warn(
                f"{type(self).__name__}: a checkpoint loaded outside a fit restores no averaging state "
                "(the module gets the averaged weights the checkpoint holds)",
                stacklevel=2,
            )
        elif "current_model_state" in checkpoint and "averaging_state" in checkpoint:
            average = {_PREFIX + k: v for k, v in checkpoint["state_dict"].items()}
            self._average_model.load_state_dict({**average, **checkpoint["averaging_state"]})
            module.load_state_dict(
                checkpoint["current_model_state"]
            )  # state_dict (the average) was loaded first
        else:
            warnings.warn(
                f"The checkpoint was not written with {type(self).__name__}: the average starts from its "
                "state_dict, as the module does",
                stacklevel=2,
            )
            self._average_model.module.load_state_dict(checkpoint["state_dict"], strict=False)


class EMAWeightAveraging(WeightAveraging):
    """An exponential moving average of the weights: ``average = decay * average + (1 - decay) * current``.

    Updated after every ``update_every_n_steps``-th optimizer step (0-based step index divisible by it) from
    ``update_starting_at_step`` on, and at the end of every epoch from ``update_starting_at_epoch`` on when
    that is given. The other arguments are WeightAveraging's.

    Example:
        >>> from ember.callbacks import EMAWeightAveraging
        >>> ema = EMAWeightAveraging(decay=0.99, update_every_n_steps=2, update_starting_at_step=10)
        >>> [step for step in range(8, 16) if ema.should_update(step_idx=step)]
        [10, 12, 14]
        >>> ema.should_update(epoch_idx=3)
        False
    """

    def __init__(
        self,
        device: torch.device | str | int | None = None,
        use_buffers: bool = True,
        decay: float = 0.999,
        update_every_n_steps: int = 1,
        update_starting_at_step: int | None = None,
        update_starting_at_epoch: int | None = None,
        **kwargs: Any,
    ) -> None:
        if "avg_fn" in kwargs:
            raise ConfigError(
                "EMAWeightAveraging(avg_fn=...): its average is the EMA of `decay`; pass avg_fn to "
                "WeightAveraging instead"
            )
        super().__init__(device=device, use_buffers=use_buffers, avg_fn=get_ema_avg_fn(decay=decay), **kwargs)
        self.update_every_n_steps = update_every_n_steps
        self.update_starting_at_step = update_starting_at_step
        self.update_starting_at_epoch = update_starting_at_epoch

    def should_update(self, step_idx: int | None = None, epoch_idx: int | None = None) -> bool:
        """Steps: from `update_starting_at_step`, every `update_every_n_steps`; epochs: from
        `update_starting_at_epoch`."""
        if step_idx is not None:
            started = self.update_starting_at_step is None or step_idx >= self.update_starting_at_step
            if started and self.update_every_n_steps > 0 and step_idx % self.update_every_n_steps == 0:
                return True
        if epoch_idx is not None:
            return self.update_starting_at_epoch is not None and epoch_idx >= self.update_starting_at_epoch
        return False


def _pairs(average: torch.nn.Module, current: torch.nn.Module) -> Any:
    """(averaged, current) tensors: the parameters, then the buffers, in the same order in both."""
    averaged = itertools.chain(average.parameters(), average.buffers())
    own = itertools.chain(current.parameters(), current.buffers())
    return zip(averaged, own, strict=True)


def _builds_layers(module: Any) -> bool:
    """Whether the module's class overrides `configure_model` (ember's Module leaves it empty; the callbacks
    do not import the Module, a part beside them)."""
    for klass in type(module).__mro__:
        if "configure_model" in vars(klass):
            return klass.__module__ != "ember.module"
    return False
