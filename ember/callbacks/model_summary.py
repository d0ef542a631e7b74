"""ModelSummary: the table of a model's layers printed when fit starts (Lightning's ``ModelSummary``).

Columns as Lightning 2.6: index, name, type, parameters, train/eval mode, FLOPs, and — when the
module has an ``example_input_array`` — the input and output sizes of each layer, measured by one
forward pass under ``torch.no_grad`` in eval mode (the modes are restored afterwards).
"""

from __future__ import annotations

import math
import sys
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.errors import ConfigError
from ember.runtime.devices import move_to_device

UNKNOWN_SIZE = "?"
NOT_APPLICABLE = "n/a"
_UNITS = (" ", "K", "M", "B", "T")
_PRECISION_BITS = {
    "64": 64,
    "64-true": 64,
    "32": 32,
    "32-true": 32,
    "16": 16,
    "16-mixed": 16,
    "16-true": 16,
    "bf16": 16,
    "bf16-mixed": 16,
    "bf16-true": 16,
}


def human_readable_count(number: float) -> str:
    """``number`` abbreviated with K, M, B, T.

    >>> [human_readable_count(n) for n in (123, 1234, 2e6, 3e9, 4e14, 5e15)]
    ['123  ', '1.2 K', '2.0 M', '3.0 B', '400 T', '5,000 T']
    """
    digits = int(math.floor(math.log10(number)) + 1) if number > 0 else 1
    group = min(math.ceil(digits / 3), len(_UNITS)) - 1
    scaled = number / 10 ** (3 * group)
    if group == 0 or scaled >= 100:
        return f"{int(scaled):,d} {_UNITS[group]}"
    return f"{scaled:,.1f} {_UNITS[group]}"


class Summary:
    """The layers of ``model`` down to ``max_depth`` (1: its children; -1: every module; 0: none).

    Example:
        >>> net = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.BatchNorm1d(512))
        >>> print(Summary(net, max_depth=1))  # doctest: +NORMALIZE_WHITESPACE
          | Name | Type        | Params | Mode  | FLOPs
        -----------------------------------------------------
        0 | 0    | Linear      | 131 K  | train | 0
        1 | 1    | BatchNorm1d | 1.0 K  | train | 0
        -----------------------------------------------------
        132 K     Trainable params
        0         Non-trainable params
        132 K     Total params
        0.530     Total estimated model params size (MB)
        2         Modules in train mode
        0         Modules in eval mode
        0         Total Flops
    """

    def __init__(self, model: torch.nn.Module, max_depth: int = 1, precision: Any = "32") -> None:
        if not isinstance(max_depth, int) or max_depth < -1:
            raise ConfigError(
                f"ModelSummary(max_depth={max_depth!r}): use -1 (every layer), 0 (no table) or a depth >= 1"
            )
        self.model, self.max_depth = model, max_depth
        self.bits = _PRECISION_BITS.get(str(precision), 32)
        named = (
            []
            if max_depth == 0
            else list(model.named_children())
            if max_depth == 1
            else list(model.named_modules())[1:]
        )
        self.layers = {name: module for name, module in named if max_depth < 1 or name.count(".") < max_depth}
        self.in_sizes: dict[str, Any] = dict.fromkeys(self.layers, UNKNOWN_SIZE)
        self.out_sizes: dict[str, Any] = dict.fromkeys(self.layers, UNKNOWN_SIZE)
        self.flops: dict[str, int] = dict.fromkeys(self.layers, 0)
        self.total_flops = 0
        if getattr(model, "example_input_array", None) is not None:
            self._measure(model.example_input_array)

    @property
    def total_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters() if not _is_lazy(p))

    @property
    def trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad and not _is_lazy(p))

    @property
    def model_size(self) -> float:
        """Megabytes the parameters take at the run's precision."""
        return self.total_parameters * self.bits / 8 * 1e-6

    @property
    def total_training_modes(self) -> dict[str, int]:
        modes = [m.training for m in list(self.model.modules())[1:]]
        return {"train": modes.count(True), "eval": modes.count(False)}

    def columns(self) -> list[tuple[str, list[str]]]:
        names = list(self.layers)
        counts = [sum(p.numel() for p in m.parameters() if not _is_lazy(p)) for m in self.layers.values()]
        columns = [
            (" ", [str(i) for i in range(len(names))]),
            ("Name", names),
            ("Type", [type(m).__name__ for m in self.layers.values()]),
            ("Params", [human_readable_count(c) for c in counts]),
            ("Mode", ["train" if m.training else "eval" for m in self.layers.values()]),
            ("FLOPs", [human_readable_count(self.flops[n]) for n in names]),
        ]
        with_sizes = getattr(self.model, "example_input_array", None) is not None
        if with_sizes:
            columns += [
                ("In sizes", [str(self.in_sizes[n]) for n in names]),
                ("Out sizes", [str(self.out_sizes[n]) for n in names]),
            ]
        leftover = self.total_parameters - sum(counts)
        if leftover > 0:  # parameters held by the root module itself
            extra = [
                " ",
                "other params",
                NOT_APPLICABLE,
                human_readable_count(leftover),
                NOT_APPLICABLE,
                NOT_APPLICABLE,
            ]
            extra += [NOT_APPLICABLE, NOT_APPLICABLE] if with_sizes else []
            for (_, values), value in zip(columns, extra, strict=True):
                values.append(value)
        return columns

    def __str__(self) -> str:
        columns = self.columns()
        widths = [max([len(header), *(len(v) for v in values)]) for header, values in columns]
        rule = "-" * (sum(widths) + 3 * (len(columns) + 1))
        lines = [" | ".join(h.ljust(w) for (h, _), w in zip(columns, widths, strict=True)), rule]
        for i in range(len(columns[0][1])):
            lines.append(
                " | ".join(values[i].ljust(w) for (_, values), w in zip(columns, widths, strict=True))
            )
        lines.append(rule)
        modes = self.total_training_modes
        totals = [
            (human_readable_count(self.trainable_parameters), "Trainable params"),
            (human_readable_count(self.total_parameters - self.trainable_parameters), "Non-trainable params"),
            (human_readable_count(self.total_parameters), "Total params"),
            (f"{self.model_size:,.3f}", "Total estimated model params size (MB)"),
            (str(modes["train"]), "Modules in train mode"),
            (str(modes["eval"]), "Modules in eval mode"),
            (human_readable_count(self.total_flops), "Total Flops"),
        ]
        lines += [value.ljust(10) + label for value, label in totals]
        return "\n".join(lines)

    def _measure(self, example: Any) -> None:
        def record(name: str) -> Any:
            def hook(module: torch.nn.Module, inputs: Any, output: Any) -> None:
                self.in_sizes[name] = _shape(inputs[0] if len(inputs) == 1 else list(inputs))
                self.out_sizes[name] = _shape(output)

            return hook

        from torch.utils.flop_counter import FlopCounterMode  # only when measuring: it costs import time

        handles = [module.register_forward_hook(record(name)) for name, module in self.layers.items()]
        modes = {m: m.training for m in self.model.modules()}
        # depth=None: every level, as Lightning asks (torch accepts it; its hint says int)
        counter = FlopCounterMode(display=False, depth=None)  # type: ignore[arg-type]
        device = next((p.device for p in self.model.parameters()), torch.device("cpu"))
        if device.type != "cpu":  # Lightning moves the example to the model's device first
            example = move_to_device(example, device)
        try:
            self.model.eval()
            with torch.no_grad(), counter:
                if isinstance(example, (list, tuple)):
                    self.model(*example)
                elif isinstance(example, dict):
                    self.model(**example)
                else:
                    self.model(example)
        finally:
            for handle in handles:
                handle.remove()
            for module, training in modes.items():
                module.train(training)
        counts = counter.get_flop_counts()
        root = type(self.model).__name__
        self.flops = {name: sum(counts.get(f"{root}.{name}", {}).values()) for name in self.layers}
        self.total_flops = counter.get_total_flops()


class ModelSummary(Callback):
    """Print the model's layer table when fit starts (on global rank zero).

    ``max_depth`` — how deep nested layers are listed (0 turns the table off, -1 lists all).

    Example:
        >>> from ember import Trainer
        >>> from ember.callbacks import ModelSummary
        >>> trainer = Trainer(callbacks=[ModelSummary(max_depth=2)], logger=False, enable_checkpointing=False)
    """

    def __init__(self, max_depth: int = 1, **summarize_kwargs: Any) -> None:
        if not isinstance(max_depth, int) or max_depth < -1:
            raise ConfigError(
                f"ModelSummary(max_depth={max_depth!r}): use -1 (every layer), 0 (no table) or a depth >= 1"
            )
        if summarize_kwargs:  # Lightning passes them to RichModelSummary's table; the plain table has none
            raise ConfigError(
                f"ModelSummary({', '.join(sorted(summarize_kwargs))}=...) is an option of "
                "RichModelSummary's table; use ember.callbacks.RichModelSummary, or pass max_depth only"
            )
        self._max_depth = max_depth

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if not self._max_depth or not trainer.is_global_zero:
            return
        summary = Summary(module, self._max_depth, precision=getattr(trainer, "precision", "32"))
        print(summary, file=sys.stderr)


def _shape(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return list(value.shape)
    if isinstance(value, (list, tuple)):
        return [_shape(v) for v in value]
    return UNKNOWN_SIZE


def _is_lazy(parameter: torch.Tensor) -> bool:
    return isinstance(parameter, torch.nn.parameter.UninitializedParameter)
