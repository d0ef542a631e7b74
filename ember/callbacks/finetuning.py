"""Freeze a model's parts before training and unfreeze them later (Lightning's ``BaseFinetuning``,
``BackboneFinetuning``).

Unfrozen parameters join the optimizer as a new parameter group. Those groups are not created by
``configure_optimizers``, so the callback's state records them by parameter name; on resume it
rebuilds them at ``on_fit_start``, before the optimizer's saved state is loaded into them.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import torch
from torch.nn.modules.batchnorm import _BatchNorm

from ember.callbacks.callback import Callback
from ember.errors import ConfigError

Modules = torch.nn.Module | Iterable[Any]


class BaseFinetuning(Callback):
    """Subclass it: ``freeze_before_training(module)`` runs at setup, before ``configure_optimizers``;
    ``finetune_function(module, epoch, optimizer)`` runs at every training epoch start, per optimizer.

    Example:
        >>> import torch
        >>> class FreezeFeatures(BaseFinetuning):
        ...     def freeze_before_training(self, module):
        ...         self.freeze(module.features)
        ...     def finetune_function(self, module, epoch, optimizer):
        ...         if epoch == 1:
        ...             self.unfreeze_and_add_param_group(module.features, optimizer, train_bn=True)
        >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
        >>> BaseFinetuning.freeze(net, train_bn=True)
        >>> [p.requires_grad for p in net.parameters()]
        [False, False, True, True]
    """

    def __init__(self) -> None:
        self._internal_optimizer_metadata: dict[int, list[dict[str, Any]]] = {}
        self._restarting = False

    def state_dict(self) -> dict[str, Any]:
        return {"internal_optimizer_metadata": self._internal_optimizer_metadata}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._restarting = True
        self._internal_optimizer_metadata = state_dict.get("internal_optimizer_metadata", state_dict)

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self.freeze_before_training(module)

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if not self._restarting:
            return
        self._restarting = False
        by_name = dict(module.named_parameters())
        for index, optimizer in enumerate(trainer.optimizers):
            groups = self._internal_optimizer_metadata.get(index)
            if not groups:
                continue
            added = {n for group in groups[len(optimizer.param_groups) :] for n in group["params"]}
            optimizer.param_groups = [
                _with_params(group, [by_name[n] for n in group["params"]]) for group in groups
            ]
            # freeze_before_training froze them again at setup; they had been unfrozen before the save
            owners = [
                m
                for m in module.modules()
                if any(id(p) in {id(by_name[n]) for n in added} for p in m.parameters(recurse=False))
            ]
            self.make_trainable(owners)

    def on_train_epoch_start(self, trainer: Any, module: Any) -> None:
        for index, optimizer in enumerate(trainer.optimizers):
            groups_before = len(optimizer.param_groups)
            self.finetune_function(module, trainer.current_epoch, optimizer)
            self._remember_groups(module, index, groups_before, optimizer.param_groups)

    def finetune_function(self, pl_module: Any, epoch: int, optimizer: torch.optim.Optimizer) -> None:
        """Override: unfreeze what should train from ``epoch`` on (add it to ``optimizer``)."""
        raise NotImplementedError(
            f"{type(self).__name__} must define finetune_function(module, epoch, optimizer)"
        )

    def freeze_before_training(self, pl_module: Any) -> None:
        """Override: freeze what should not train at first."""
        raise NotImplementedError(f"{type(self).__name__} must define freeze_before_training(module)")

    # ---- the helpers subclasses call ------------------------------------------------------------
    @staticmethod
    def flatten_modules(modules: Modules) -> list[torch.nn.Module]:
        """The leaf modules of ``modules`` (and parents holding parameters themselves)."""
        if isinstance(modules, torch.nn.ModuleDict):
            modules = modules.values()
        if isinstance(modules, torch.nn.Module):
            candidates: Iterable[torch.nn.Module] = modules.modules()
        else:
            candidates = [leaf for m in modules for leaf in BaseFinetuning.flatten_modules(m)]
        return [m for m in candidates if not list(m.children()) or m._parameters]

    @staticmethod
    def filter_params(
        modules: Modules, train_bn: bool = True, requires_grad: bool = True
    ) -> Iterator[torch.nn.Parameter]:
        """The parameters of ``modules`` whose ``requires_grad`` equals ``requires_grad`` (BatchNorm's skipped
        unless ``train_bn``)."""
        for leaf in BaseFinetuning.flatten_modules(modules):
            if isinstance(leaf, _BatchNorm) and not train_bn:
                continue
            for param in leaf.parameters(recurse=False):
                if param.requires_grad == requires_grad:
                    yield param

    @staticmethod
    def make_trainable(modules: Modules) -> None:
        """Unfreeze ``modules`` (BatchNorm layers track running statistics again)."""
        for leaf in BaseFinetuning.flatten_modules(modules):
            if isinstance(leaf, _BatchNorm):
                leaf.track_running_stats = True
            for param in leaf.parameters(recurse=False):
                param.requires_grad = True

    @staticmethod
    def freeze_module(module: torch.nn.Module) -> None:
        """Freeze one module's own parameters (a BatchNorm stops tracking running statistics)."""
        if isinstance(module, _BatchNorm):
            module.track_running_stats = False
        for param in module.parameters(recurse=False):
            param.requires_grad = False

    @staticmethod
    def freeze(modules: Modules, train_bn: bool = True) -> None:
        """Freeze ``modules``; with ``train_bn`` their BatchNorm layers stay trainable."""
        for leaf in BaseFinetuning.flatten_modules(modules):
            if isinstance(leaf, _BatchNorm) and train_bn:
                BaseFinetuning.make_trainable(leaf)
            else:
                BaseFinetuning.freeze_module(leaf)

    @staticmethod
    def filter_on_optimizer(
        optimizer: torch.optim.Optimizer, params: Iterable[torch.nn.Parameter]
    ) -> list[torch.nn.Parameter]:
        """``params`` minus those already in one of ``optimizer``'s groups (with a warning naming the fix)."""
        present = {id(p) for group in optimizer.param_groups for p in group["params"]}
        params = list(params)
        kept = [p for p in params if id(p) not in present]
        if len(kept) != len(params):
            warnings.warn(
                "some parameters to unfreeze are already in the optimizer and are skipped; build the "
                f"optimizer from the trainable parameters only: {type(optimizer).__name__}(filter(lambda p: "
                "p.requires_grad, self.parameters()), ...)",
                stacklevel=3,
            )
        return kept

    @staticmethod
    def unfreeze_and_add_param_group(
        modules: Modules,
        optimizer: torch.optim.Optimizer,
        lr: float | None = None,
        initial_denom_lr: float = 10.0,
        train_bn: bool = True,
    ) -> None:
        """Unfreeze ``modules`` and add their parameters to ``optimizer`` as a new group, at ``lr`` or (when
        None) the first group's lr divided by ``initial_denom_lr``."""
        BaseFinetuning.make_trainable(modules)
        group_lr = optimizer.param_groups[0]["lr"] / initial_denom_lr if lr is None else float(lr)
        params = BaseFinetuning.filter_on_optimizer(
            optimizer, BaseFinetuning.filter_params(modules, train_bn=train_bn, requires_grad=True)
        )
        if params:
            optimizer.add_param_group({"params": params, "lr": group_lr})

    def _remember_groups(
        self, module: Any, index: int, groups_before: int, groups: list[dict[str, Any]]
    ) -> None:
        names = {p: n for n, p in module.named_parameters()}
        if index not in self._internal_optimizer_metadata:
            self._internal_optimizer_metadata[index] = [_by_name(g, names) for g in groups]
        elif len(groups) != groups_before:
            self._internal_optimizer_metadata[index].extend(
                _by_name(g, names) for g in groups[groups_before:]
            )


def multiplicative(epoch: int) -> float:
    """BackboneFinetuning's default schedule: the backbone's lr doubles every epoch."""
    return 2.0


class BackboneFinetuning(BaseFinetuning):
    """Train ``module.backbone`` from ``unfreeze_backbone_at_epoch`` on, its lr rising by ``lambda_func``.

    The backbone is frozen before training. At the unfreeze epoch it joins the first optimizer at
    ``backbone_initial_lr`` (default: the current lr times ``backbone_initial_ratio_lr``); every later
    epoch its lr is multiplied by ``lambda_func(epoch + 1)``, and with ``should_align`` it never
    exceeds the rest of the model's lr.

    Example:
        >>> import torch
        >>> import ember
        >>> from ember.callbacks import BackboneFinetuning
        >>> class Transfer(ember.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.backbone = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
        ...         self.head = torch.nn.Linear(8, 2)
        ...     def training_step(self, batch, batch_idx):
        ...         x, y = batch
        ...         return torch.nn.functional.cross_entropy(self.head(self.backbone(x)), y)
        ...     def configure_optimizers(self):  # only what trains now; the callback adds the backbone later
        ...         return torch.optim.SGD(filter(lambda p: p.requires_grad, self.parameters()), lr=0.1)
        >>> data = [(torch.randn(4, 4), torch.tensor([0, 1, 0, 1]))] * 2
        >>> finetuning = BackboneFinetuning(unfreeze_backbone_at_epoch=1)
        >>> trainer = ember.Trainer(max_epochs=3, callbacks=[finetuning], logger=False,
        ...                         enable_checkpointing=False, enable_progress_bar=False,
        ...                         enable_model_summary=False)
        >>> trainer.fit(Transfer(), data)
        >>> [round(group["lr"], 4) for group in trainer.optimizers[0].param_groups]  # head, then backbone
        [0.1, 0.02]
    """

    def __init__(
        self,
        unfreeze_backbone_at_epoch: int = 10,
        lambda_func: Callable[[int], float] = multiplicative,
        backbone_initial_ratio_lr: float = 10e-2,
        backbone_initial_lr: float | None = None,
        should_align: bool = True,
        initial_denom_lr: float = 10.0,
        train_bn: bool = True,
        verbose: bool = False,
        rounding: int = 12,
    ) -> None:
        super().__init__()
        self.unfreeze_backbone_at_epoch = unfreeze_backbone_at_epoch
        self.lambda_func = lambda_func
        self.backbone_initial_ratio_lr = backbone_initial_ratio_lr
        self.backbone_initial_lr = backbone_initial_lr
        self.should_align = should_align
        self.initial_denom_lr = initial_denom_lr
        self.train_bn = train_bn
        self.verbose = verbose
        self.rounding = rounding
        self.previous_backbone_lr: float | None = None

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "previous_backbone_lr": self.previous_backbone_lr}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.previous_backbone_lr = state_dict["previous_backbone_lr"]
        super().load_state_dict(state_dict)

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if not isinstance(getattr(module, "backbone", None), torch.nn.Module):
            raise ConfigError(
                f"BackboneFinetuning needs the module to have an nn.Module attribute 'backbone'; "
                f"{type(module).__name__} has none (subclass BaseFinetuning to freeze other parts)"
            )
        super().setup(trainer, module, stage)

    def freeze_before_training(self, pl_module: Any) -> None:
        self.freeze(pl_module.backbone)

    def finetune_function(self, pl_module: Any, epoch: int, optimizer: torch.optim.Optimizer) -> None:
        current_lr = optimizer.param_groups[0]["lr"]
        if epoch == self.unfreeze_backbone_at_epoch:
            backbone_lr = (
                self.backbone_initial_lr
                if self.backbone_initial_lr is not None
                else current_lr * self.backbone_initial_ratio_lr
            )
            self.unfreeze_and_add_param_group(
                pl_module.backbone,
                optimizer,
                backbone_lr,
                train_bn=self.train_bn,
                initial_denom_lr=self.initial_denom_lr,
            )
        elif epoch > self.unfreeze_backbone_at_epoch:
            assert self.previous_backbone_lr is not None
            backbone_lr = self.lambda_func(epoch + 1) * self.previous_backbone_lr
            if self.should_align and backbone_lr > current_lr:
                backbone_lr = current_lr
            optimizer.param_groups[-1]["lr"] = backbone_lr
        else:
            return
        self.previous_backbone_lr = backbone_lr
        if self.verbose:
            print(
                f"ember: BackboneFinetuning: lr {round(current_lr, self.rounding)}, "
                f"backbone lr {round(backbone_lr, self.rounding)}",
                file=sys.stderr,
            )


def _by_name(group: dict[str, Any], names: dict[Any, str]) -> dict[str, Any]:
    return _with_params(group, [names[p] for p in group["params"]])


def _with_params(group: dict[str, Any], params: list[Any]) -> dict[str, Any]:
    return {**{k: v for k, v in group.items() if k != "params"}, "params": params}
