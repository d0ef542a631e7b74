"""RichModelSummary: ModelSummary's table drawn with `rich`
(Lightning 2.6's callback; rich is the `rich` extra).

The same rows as ModelSummary (index, name, type, parameters, mode, FLOPs and, with an
``example_input_array``, the input and output sizes), in a rich table with Lightning's column alignment and
header style (``header_style``, default "bold magenta"), then the totals as a grid of bold labels, printed on
rich's console when fit starts (global rank zero). rich is imported when the callback is built, never at
``import ember``; without it the constructor refuses in one line.
"""

from __future__ import annotations

from typing import Any

from ember.callbacks.model_summary import ModelSummary, Summary, human_readable_count
from ember.errors import ConfigError

#: The options Lightning's RichModelSummary reads from its ``**summarize_kwargs``.
SUMMARIZE_OPTIONS = ("header_style",)
_RIGHT = {"Params", "Params per Device", "FLOPs", "In sizes", "Out sizes"}


class RichModelSummary(ModelSummary):
    """Print the model's layer table with rich when fit starts (``max_depth``: 0 off, -1 every layer).

    Example:
        >>> from ember.callbacks import RichModelSummary
        >>> summary = RichModelSummary(max_depth=2, header_style="bold blue")
        >>> RichModelSummary(title="layers")
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: RichModelSummary(title=...): Lightning's table reads header_style only
    """

    def __init__(self, max_depth: int = 1, **summarize_kwargs: Any) -> None:
        try:
            import rich.table  # noqa: F401  (checked now: the refusal belongs at construction)
        except ImportError:
            raise ConfigError(
                "RichModelSummary needs the rich package: pip install 'ember[rich]', or use ModelSummary"
            ) from None
        unknown = sorted(set(summarize_kwargs) - set(SUMMARIZE_OPTIONS))
        if unknown:
            raise ConfigError(
                f"RichModelSummary({', '.join(unknown)}=...): Lightning's table reads header_style only"
            )
        super().__init__(max_depth)
        self._summarize_kwargs = summarize_kwargs

    def on_fit_start(self, trainer: Any, module: Any) -> None:
        if not self._max_depth or not trainer.is_global_zero:
            return
        summary = Summary(module, self._max_depth, precision=getattr(trainer, "precision", "32"))
        self.summarize(
            summary.columns(),
            summary.total_parameters,
            summary.trainable_parameters,
            summary.model_size,
            summary.total_training_modes,
            summary.total_flops,
            **self._summarize_kwargs,
        )

    @staticmethod
    def summarize(
        summary_data: list[tuple[str, list[str]]],
        total_parameters: int,
        trainable_parameters: int,
        model_size: float,
        total_training_modes: dict[str, int],
        total_flops: int,
        **summarize_kwargs: Any,
    ) -> None:
        """Print the table of `summary_data` (columns as (header, values)) and the totals (Lightning's
        signature: override it to draw the summary another way)."""
        from rich import get_console
        from rich.table import Table

        table = Table(header_style=summarize_kwargs.get("header_style", "bold magenta"))
        for header, _ in summary_data:
            if header == " ":
                table.add_column(header, style="dim")
            elif header == "Name":
                table.add_column(header, justify="left", no_wrap=True)
            else:
                table.add_column(
                    header,
                    justify="right" if header in _RIGHT else "left",
                    style="white" if header in ("In sizes", "Out sizes") else None,
                )
        for row in zip(*(values for _, values in summary_data), strict=True):
            table.add_row(*row)
        console = get_console()
        console.print(table)
        counts = [
            human_readable_count(int(n))
            for n in (trainable_parameters, total_parameters - trainable_parameters, total_parameters)
        ]
        grid = Table.grid(expand=True)
        grid.add_column()
        grid.add_column()
        for label, value in (
            ("Trainable params", f"{counts[0]:<10}"),
            ("Non-trainable params", f"{counts[1]:<10}"),
            ("Total params", f"{counts[2]:<10}"),
            ("Total estimated model params size (MB)", f"{f'{model_size:,.3f}':<10}"),
            ("Modules in train mode", total_training_modes["train"]),
            ("Modules in eval mode", total_training_modes["eval"]),
            ("Total FLOPs", human_readable_count(total_flops)),
        ):
            grid.add_row(f"[bold]{label}[/]: {value}")
        console.print(grid)
