"""ModelPruning: prune parameters at epoch ends with torch.nn.utils.prune (Lightning 2.6's callback).

How it runs, as Lightning's: ``setup`` decides what is pruned (``parameters_to_prune``, by default every
``weight`` and ``bias`` parameter of every layer that is not a container) and, for the lottery ticket
hypothesis, keeps a copy of those layers as they started. At each training epoch end (or each validation epoch
end with ``prune_on_train_epoch_end=False``), when ``apply_pruning`` (a bool or a function of the epoch) says
so and ``amount`` (a fraction, a count, or a function of the epoch) is not 0, torch's pruning is applied —
over all the parameters together (``use_global_unstructured``) or to each one — and then, with the lottery
ticket hypothesis, the unpruned weights go back to their starting values (or to freshly initialised ones with
``resample_parameters``). With ``make_pruning_permanent`` checkpoints hold the pruned weights under their
plain names (no ``_orig``/``_mask``), and the masks are folded into the module when training ends.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Sequence
from copy import deepcopy
from functools import partial
from typing import Any

import torch
import torch.nn.utils.prune as torch_prune
from torch import nn

from ember.callbacks.callback import Callback
from ember.errors import ConfigError

log = logging.getLogger(__name__)

#: The pruning functions a name picks: the function (one parameter at a time) and the method (global pruning).
PRUNING_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "ln_structured": torch_prune.ln_structured,
    "l1_unstructured": torch_prune.l1_unstructured,
    "random_structured": torch_prune.random_structured,
    "random_unstructured": torch_prune.random_unstructured,
}
PRUNING_METHODS: dict[str, type[torch_prune.BasePruningMethod]] = {
    "ln_structured": torch_prune.LnStructured,
    "l1_unstructured": torch_prune.L1Unstructured,
    "random_structured": torch_prune.RandomStructured,
    "random_unstructured": torch_prune.RandomUnstructured,
}
_CONTAINERS = (nn.Sequential, nn.ModuleList, nn.ModuleDict)

ParameterList = Sequence[tuple[nn.Module, str]]


class ModelPruning(Callback):
    """Prune the module's parameters during training (``pruning_fn``: one of PRUNING_FUNCTIONS' names, or a
    ``torch.nn.utils.prune.BasePruningMethod`` subclass for global pruning). Override
    ``filter_parameters_to_prune`` to choose among the parameters.

    Example:
        >>> from ember.callbacks import ModelPruning
        >>> pruning = ModelPruning("l1_unstructured", amount=lambda epoch: 0.2 if epoch < 3 else 0)
        >>> ModelPruning("ln_structured", use_global_unstructured=False, pruning_dim=0)
        ... # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: ModelPruning(pruning_fn='ln_structured') needs pruning_norm
        (the n of the Ln norm)
    """

    PARAMETER_NAMES = ("weight", "bias")

    def __init__(
        self,
        pruning_fn: Callable[..., Any] | str,
        parameters_to_prune: ParameterList = (),
        parameter_names: list[str] | None = None,
        use_global_unstructured: bool = True,
        amount: int | float | Callable[[int], int | float] = 0.5,
        apply_pruning: bool | Callable[[int], bool] = True,
        make_pruning_permanent: bool = True,
        use_lottery_ticket_hypothesis: bool | Callable[[int], bool] = True,
        resample_parameters: bool = False,
        pruning_dim: int | None = None,
        pruning_norm: int | None = None,
        verbose: int = 0,
        prune_on_train_epoch_end: bool = True,
    ) -> None:
        self._use_global_unstructured = use_global_unstructured
        self._parameters_to_prune = parameters_to_prune
        self._use_lottery_ticket_hypothesis = use_lottery_ticket_hypothesis
        self._resample_parameters = resample_parameters
        self._prune_on_train_epoch_end = prune_on_train_epoch_end
        self._parameter_names = parameter_names or self.PARAMETER_NAMES
        self._global_kwargs: dict[str, Any] = {}
        self._original_layers: dict[int, tuple[nn.Module, list[tuple[int, str]]]] | None = None
        self._pruning_method_name: str | None = None
        for name in self._parameter_names:
            if name not in self.PARAMETER_NAMES:
                raise ConfigError(f"ModelPruning(parameter_names=[{name!r}]): use 'weight' and/or 'bias'")
        self.pruning_fn = self._pruning_fn(pruning_fn, use_global_unstructured, pruning_dim, pruning_norm)
        if isinstance(amount, bool) or not (isinstance(amount, (int, float)) or callable(amount)):
            raise ConfigError(
                f"ModelPruning(amount={amount!r}) should be a fraction, a count or a function of the epoch"
            )
        if verbose not in (0, 1, 2):
            raise ConfigError(f"ModelPruning(verbose={verbose!r}): use 0, 1 or 2")
        self.amount, self._apply_pruning = amount, apply_pruning
        self._make_pruning_permanent, self._verbose = make_pruning_permanent, verbose

    def _pruning_fn(self, pruning_fn: Any, use_global: bool, dim: int | None, norm: int | None) -> Any:
        """The function (or, for global pruning, the method class) `pruning_fn` names, its options bound."""
        if isinstance(pruning_fn, str):
            name = pruning_fn.lower()
            if name not in PRUNING_FUNCTIONS:
                raise ConfigError(
                    f"ModelPruning(pruning_fn={pruning_fn!r}): use one of {sorted(PRUNING_FUNCTIONS)} or "
                    "a torch.nn.utils.prune.BasePruningMethod subclass"
                )
            options: dict[str, Any] = {}
            if name.endswith("_structured"):
                if dim is None:
                    raise ConfigError(
                        f"ModelPruning(pruning_fn={pruning_fn!r}) needs pruning_dim (structured pruning)"
                    )
                if name == "ln_structured":
                    if norm is None:
                        raise ConfigError(
                            f"ModelPruning(pruning_fn={pruning_fn!r}) needs pruning_norm (the n of the "
                            "Ln norm)"
                        )
                    options["n"] = norm
                options["dim"] = dim
            if use_global:
                self._global_kwargs, method = options, PRUNING_METHODS[name]
                self._pruning_method_name = method.__name__
            else:
                self._pruning_method_name = PRUNING_FUNCTIONS[name].__name__
                return partial(PRUNING_FUNCTIONS[name], **options)
        elif inspect.isclass(pruning_fn) and issubclass(pruning_fn, torch_prune.BasePruningMethod):
            if not use_global:
                raise ConfigError(
                    "ModelPruning(pruning_fn=<BasePruningMethod>) works with use_global_unstructured=True"
                )
            method = pruning_fn
        else:
            raise ConfigError(
                f"ModelPruning(pruning_fn={pruning_fn!r}): use one of {sorted(PRUNING_FUNCTIONS)} or a "
                "torch.nn.utils.prune.BasePruningMethod subclass (the class, not an instance)"
            )
        # every concrete pruning method declares PRUNING_TYPE; torch's base class does not
        pruning_type = method.PRUNING_TYPE  # type: ignore[attr-defined]
        if pruning_type != "unstructured":
            raise ConfigError(
                f"ModelPruning: {method.__name__} is {pruning_type} pruning; global pruning takes "
                "unstructured methods only (pass use_global_unstructured=False)"
            )
        return method

    def filter_parameters_to_prune(self, parameters_to_prune: ParameterList = ()) -> ParameterList:
        """Override to choose which (layer, parameter name) pairs are pruned; the default keeps them all."""
        return parameters_to_prune

    # ---- the fit ----------------------------------------------------------------------------------
    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        chosen = self.sanitize_parameters_to_prune(module, self._parameters_to_prune, self._parameter_names)
        self._parameters_to_prune = self.filter_parameters_to_prune(chosen)
        if self._use_lottery_ticket_hypothesis:
            self._original_layers = {}
            for i, (layer, name) in enumerate(self._parameters_to_prune):
                self._original_layers.setdefault(id(layer), (deepcopy(layer), []))[1].append((i, name))

    def on_train_epoch_end(self, trainer: Any, module: Any) -> None:
        if self._prune_on_train_epoch_end:
            self._run_pruning(trainer.current_epoch)

    def on_validation_epoch_end(self, trainer: Any, module: Any) -> None:
        if not trainer.sanity_checking and not self._prune_on_train_epoch_end:
            self._run_pruning(trainer.current_epoch)

    def on_train_end(self, trainer: Any, module: Any) -> None:
        if self._make_pruning_permanent:
            self.make_pruning_permanent(module)

    def on_save_checkpoint(self, trainer: Any, module: Any, checkpoint: dict[str, Any]) -> None:
        if self._make_pruning_permanent:
            checkpoint["state_dict"] = permanent_state_dict(module)

    def _run_pruning(self, epoch: int) -> None:
        prune = self._apply_pruning(epoch) if callable(self._apply_pruning) else self._apply_pruning
        amount = self.amount(epoch) if callable(self.amount) else self.amount
        if not prune or not amount:
            return
        self.apply_pruning(amount)
        lottery = self._use_lottery_ticket_hypothesis
        if lottery(epoch) if callable(lottery) else lottery:
            self.apply_lottery_ticket_hypothesis()

    # ---- pruning --------------------------------------------------------------------------------------
    def apply_pruning(self, amount: int | float) -> None:
        """Prune `amount` (a fraction or a count) of the chosen parameters."""
        before = [pruned_count(m, n) for m, n in self._parameters_to_prune] if self._verbose else []
        if self._use_global_unstructured:
            self._global_kwargs["amount"] = amount
            accepted = set(inspect.signature(self.pruning_fn).parameters) - {"self"}
            torch_prune.global_unstructured(
                self._parameters_to_prune,
                pruning_method=self.pruning_fn,
                **{k: v for k, v in self._global_kwargs.items() if k in accepted},
            )
        else:
            for layer, name in self._parameters_to_prune:
                self.pruning_fn(layer, name=name, amount=amount)
        if self._verbose:
            self._log_sparsity(before, [pruned_count(m, n) for m, n in self._parameters_to_prune], amount)

    def apply_lottery_ticket_hypothesis(self) -> None:
        """Step 4 of the lottery ticket hypothesis: the weights left unpruned go back to their values at the
        start (with `resample_parameters`, to a fresh initialisation of the layer); the masks stay."""
        assert self._original_layers is not None
        for original, names in self._original_layers.values():
            source = original
            if self._resample_parameters and callable(getattr(original, "reset_parameters", None)):
                source = deepcopy(original)  # the starting values stay for the next epoch's reset
                source.reset_parameters()  # type: ignore[operator]  # checked callable above
            for i, name in names:
                layer = self._parameters_to_prune[i][0]
                target = getattr(layer, name + "_orig", None)
                target = target if target is not None else getattr(layer, name)
                value = getattr(source, name)
                if isinstance(target, torch.Tensor) and isinstance(value, torch.Tensor):
                    target.data = value.data.to(target.device)

    @staticmethod
    def make_pruning_permanent(module: nn.Module) -> None:
        """Fold every pruning mask into its parameter and remove the pruning hooks (torch's prune.remove)."""
        for layer in module.modules():
            for key, hook in list(layer._forward_pre_hooks.items()):
                if isinstance(hook, torch_prune.BasePruningMethod):
                    hook.remove(layer)
                    del layer._forward_pre_hooks[key]

    @staticmethod
    def sanitize_parameters_to_prune(
        module: nn.Module, parameters_to_prune: ParameterList = (), parameter_names: Sequence[str] = ()
    ) -> ParameterList:
        """`parameters_to_prune` checked against `module`; when empty, every `parameter_names` parameter of
        every layer that is not a container (nor the module itself)."""
        names = parameter_names or ModelPruning.PARAMETER_NAMES
        layers = [m for m in module.modules() if m is not module and not isinstance(m, _CONTAINERS)]
        if not parameters_to_prune:
            return [(m, p) for p in names for m in layers if isinstance(getattr(m, p, None), nn.Parameter)]
        if not (
            isinstance(parameters_to_prune, (list, tuple))
            and all(
                isinstance(p, (tuple, list))
                and len(p) == 2
                and isinstance(p[0], nn.Module)
                and isinstance(p[1], str)
                for p in parameters_to_prune
            )
        ):
            raise ConfigError(
                "ModelPruning(parameters_to_prune=...) should be a list of (layer, parameter name) tuples"
            )
        missing = [
            f"{type(m).__name__}.{p}"
            for m, p in parameters_to_prune
            if not any(m is layer for layer in layers) or not hasattr(m, p)
        ]
        if missing:
            raise ConfigError(
                f"ModelPruning(parameters_to_prune=...): not parameters of the module's layers: {missing}"
            )
        return parameters_to_prune

    def _log_sparsity(
        self, before: list[tuple[int, int]], after: list[tuple[int, int]], amount: float
    ) -> None:
        total = sum(size for _, size in after)
        was, now = sum(z for z, _ in before), sum(z for z, _ in after)
        log.info(
            f"Applied `{self._pruning_method_name}`. Pruned: {was}/{total} ({was / total:.2%}) -> "
            f"{now}/{total} ({now / total:.2%})"
        )
        if self._verbose == 2:
            for (layer, name), (z0, n0), (z1, n1) in zip(
                self._parameters_to_prune, before, after, strict=True
            ):
                log.info(
                    f"Applied `{self._pruning_method_name}` to `{layer!r}.{name}` with amount={amount}. "
                    f"Pruned: {z0} ({z0 / n0:.2%}) -> {z1} ({z1 / n1:.2%})"
                )


def pruned_count(layer: nn.Module, name: str) -> tuple[int, int]:
    """(zeros in the mask, mask size) of a pruned parameter; (0, 1) when it has no mask yet."""
    mask = getattr(layer, f"{name}_mask", None)
    return (0, 1) if mask is None else (int((mask == 0).sum()), mask.numel())


def permanent_state_dict(module: nn.Module) -> dict[str, Any]:
    """The module's state_dict with each pruned `<name>_orig`
    and `<name>_mask` folded into `<name>`, on the CPU.

    Example:
        >>> layer = nn.Linear(2, 2)
        >>> _ = torch_prune.l1_unstructured(layer, "weight", amount=2)
        >>> state = permanent_state_dict(layer)
        >>> sorted(state), int((state["weight"] == 0).sum())
        (['bias', 'weight'], 2)
    """
    state = module.state_dict()
    for name in {k[: -len("_mask")] for k in state if k.endswith("_mask")}:
        original, mask = state.pop(name + "_orig"), state.pop(name + "_mask")
        state[name] = mask.to(dtype=original.dtype) * original
    return {k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in state.items()}
