"""`trainer.fit(torch.compile(model))`: run the Module behind the compiled wrapper, with its steps compiled.

`torch.compile(model)` returns a `torch._dynamo.OptimizedModule` that holds the Module as `_orig_mod`
but is not one. The Trainer runs the Module itself (its hooks, its `self.log`, its parameters, so a
checkpoint's keys carry no `_orig_mod.` prefix and load into an uncompiled model) and compiles, with
the wrapper's own settings (backend, mode, options), what Lightning compiles: `forward` and the four
step methods. They are set on the instance for the stage and taken off again when it ends, so a copy
of the Module made later (or the Module given to a later, uncompiled run) is the plain one.

The Trainer's side of a step (`self.log`, `self.optimizers()`, `manual_backward`, an optimizer's
`step`) is not tensor code: tracing it would bake the Trainer's Python state (the step counter, the
metric store) into guards and recompile or fail. Those calls are graph breaks
(`torch.compiler.disable`): the step's tensor code around them is compiled, they run eagerly, and
what they receive (a logged loss) is an ordinary tensor. torch._dynamo is imported only here, when a
compiled model is first attached (`import ember` stays cheap, DESIGN decision 7).

Example:
    >>> import torch, ember
    >>> from ember.trainer.compiled import unwrap_compiled
    >>> class Net(ember.Module):
    ...     def forward(self, x):
    ...         return x
    >>> net = Net()
    >>> unwrap_compiled(net) == (net, None)
    True
"""

from __future__ import annotations

import sys
from typing import Any

#: What Lightning compiles on a compiled LightningModule (`from_compiled`), in the same places.
COMPILED_METHODS = ("forward", "training_step", "validation_step", "test_step", "predict_step")

#: Trainer-facing methods a compiled step calls: each is one graph break, run eagerly.
_EAGER_MODULE_METHODS = (
    "log",
    "log_dict",
    "print",
    "optimizers",
    "lr_schedulers",
    "manual_backward",
    "toggle_optimizer",
    "untoggle_optimizer",
    "clip_gradients",
    "all_gather",
)
_EAGER_OPTIMIZER_METHODS = ("step", "zero_grad")
_made_eager = False


def module_to_run(model: Any, attached: Any, context: Any, strategy_name: str) -> tuple[Any, Any]:
    """`(the Module to run, its compiler context)` for the model given to fit/validate/test/predict: the
    attached one (`attached`, compiled again with `context` if it was given compiled, as Lightning keeps it)
    when None is given; the Module behind a `torch.compile`d one, its steps compiled with its settings."""
    from ember.errors import ConfigError
    from ember.module import Module

    if model is None:
        if attached is None:
            raise ConfigError("no model given; pass one, e.g. trainer.test(model, dataloaders)")
        model = attached
    else:
        model, context = unwrap_compiled(model)
    if not isinstance(model, Module):
        raise ConfigError(
            f"the model is a {type(model).__name__}, not an ember.Module; subclass ember.Module "
            "(a torch.nn.Module with training_step and configure_optimizers), or pass torch.compile(module)"
        )
    if context is not None:
        if strategy_name == "model_parallel":  # Lightning refuses it there too
            raise ConfigError(
                "a torch.compile'd model cannot be given with ModelParallelStrategy; pass the "
                "module itself and compile its layers in configure_model, after parallelizing"
            )
        compile_steps(model, context)
    return model, context


def unwrap_compiled(model: Any) -> tuple[Any, Any]:
    """`(the module, the compiler context)` for a `torch.compile`d module; `(model, None)` for anything else.

    torch._dynamo is loaded only if the caller compiled something (it is then in sys.modules).
    """
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    if eval_frame is None or not isinstance(model, eval_frame.OptimizedModule):
        return model, None
    return model._orig_mod, model.dynamo_ctx


def compile_steps(module: Any, dynamo_ctx: Any) -> None:
    """Set compiled `forward` and step methods on `module` (instance attributes, undone by
    `uncompile_steps`)."""
    _make_trainer_calls_eager()
    saved = {name: module.__dict__[name] for name in COMPILED_METHODS if name in module.__dict__}
    for name in COMPILED_METHODS:
        object.__setattr__(module, name, dynamo_ctx(getattr(module, name)))
    object.__setattr__(module, "_ember_uncompiled_methods", saved)


def uncompile_steps(module: Any) -> None:
    """Put back the methods `compile_steps` replaced (a no-op on a module it did not touch)."""
    saved = module.__dict__.pop("_ember_uncompiled_methods", None)
    if saved is None:
        return
    for name in COMPILED_METHODS:
        module.__dict__.pop(name, None)
        if name in saved:
            object.__setattr__(module, name, saved[name])


def is_compiled(module: Any) -> bool:
    """Whether `compile_steps` is in effect on `module`."""
    return "_ember_uncompiled_methods" in module.__dict__


def _make_trainer_calls_eager() -> None:
    """Once per process: the Trainer-facing methods become graph breaks (`torch.compiler.disable`)."""
    global _made_eager
    if _made_eager:
        return
    import torch

    from ember.module import Module
    from ember.trainer.optimization import StepCountingOptimizer

    for owner, names in ((Module, _EAGER_MODULE_METHODS), (StepCountingOptimizer, _EAGER_OPTIMIZER_METHODS)):
        for name in names:
            setattr(owner, name, torch.compiler.disable(owner.__dict__[name], recursive=True))
    _made_eager = True
