"""DeviceStatsMonitor: log the device's statistics around
training, validation and test batches (Lightning 2.6's).

What is logged, under ``DeviceStatsMonitor.<hook>/<statistic>`` (hook: on_train_batch_start,
on_train_batch_end, on_validation_batch_start/end,
on_test_batch_start/end), as Lightning's accelerators report it:

- CPU: ``cpu_percent``, ``cpu_vm_percent`` and ``cpu_swap_percent`` from psutil (system-wide);
- CUDA: ``torch.cuda.memory_stats(device)`` (``allocated_bytes.all.current``, ``reserved_bytes.all.peak``,
  ...), with the CPU's three added when ``cpu_stats=True``;
- MPS: psutil's three named ``M1_percent``, ``M1_vm_percent``, ``M1_swap_percent``.

When, as Lightning's: a training batch logs when its optimizer step is a multiple of ``log_every_n_steps``
(at the batch's start and at its end; at the step ember logs that step's training metrics at), an evaluation
batch when its number in the run is (at the run's global step). The statistics go to the loggers only
(not to ``callback_metrics``); a fit without a logger is refused, as Lightning's.
"""

from __future__ import annotations

from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.errors import ConfigError

#: psutil's system-wide figures, under the names Lightning's CPU accelerator gives them.
CPU_NAMES = {"percent": "cpu_percent", "vm": "cpu_vm_percent", "swap": "cpu_swap_percent"}
#: ...and its MPS accelerator (Apple silicon: the CPU and GPU share the memory).
MPS_NAMES = {"percent": "M1_percent", "vm": "M1_vm_percent", "swap": "M1_swap_percent"}


def psutil_stats(names: dict[str, str]) -> dict[str, float]:
    """System-wide CPU, memory and swap use in percent, under `names`.

    Example:
        >>> stats = psutil_stats(CPU_NAMES)
        >>> sorted(stats), all(0 <= v <= 100 for v in stats.values())
        (['cpu_percent', 'cpu_swap_percent', 'cpu_vm_percent'], True)
    """
    import psutil  # optional: only runs that monitor the CPU need it

    return {
        names["vm"]: psutil.virtual_memory().percent,
        names["percent"]: psutil.cpu_percent(),
        names["swap"]: psutil.swap_memory().percent,
    }


def has_psutil() -> bool:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return False
    return True


def _refuse_without_psutil() -> None:
    raise ConfigError(
        "DeviceStatsMonitor needs psutil for CPU statistics: pip install psutil, or pass cpu_stats=False"
    )


class DeviceStatsMonitor(Callback):
    """Log the statistics of the run's device (and, with ``cpu_stats=True``, the CPU's on a GPU run).

    ``cpu_stats``: None — the CPU's only on a CPU run; True
    — always; False — never (a CPU run then logs nothing).

    Example:
        >>> from ember.callbacks import DeviceStatsMonitor
        >>> monitor = DeviceStatsMonitor(cpu_stats=False)
    """

    def __init__(self, cpu_stats: bool | None = None) -> None:
        if cpu_stats not in (None, True, False):
            raise ConfigError(f"DeviceStatsMonitor(cpu_stats={cpu_stats!r}): use None, True or False")
        if cpu_stats and not has_psutil():
            _refuse_without_psutil()
        self._cpu_stats = cpu_stats
        self._batch_step = 0  # the optimizer step the current training batch belongs to (1-based)
        self._eval_batch = 0  # the number of the current evaluation batch in its run (all its dataloaders)

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        if stage != "fit":
            return
        if not trainer.loggers:
            raise ConfigError(
                "DeviceStatsMonitor logs to the loggers: remove Trainer(logger=False), or the callback"
            )
        if (
            self._cpu_stats is None
            and trainer.strategy.root_device.type in ("cpu", "mps")
            and not has_psutil()
        ):
            _refuse_without_psutil()

    def device_stats(self, device: torch.device) -> dict[str, float]:
        """The statistics of `device` as Lightning's accelerator
        for it reports them (plus the CPU's, when asked)."""
        if device.type == "cpu":
            return psutil_stats(CPU_NAMES)
        stats: dict[str, float] = {}
        if device.type == "cuda":
            stats = dict(torch.cuda.memory_stats(device))
        elif device.type == "mps":
            stats = psutil_stats(MPS_NAMES)
        if self._cpu_stats:
            stats.update(psutil_stats(CPU_NAMES))
        return stats

    def _log(self, trainer: Any, hook: str, due: bool, step: int) -> None:
        device = trainer.strategy.root_device
        if not due or (self._cpu_stats is False and device.type == "cpu"):
            return
        stats = self.device_stats(device)
        for logger in trainer.loggers:
            separator = getattr(logger, "group_separator", "/")  # Lightning's loggers all use "/"
            logger.log_metrics(
                {f"{type(self).__qualname__}.{hook}{separator}{k}": v for k, v in stats.items()}, step
            )

    def _train_due(self, trainer: Any) -> bool:
        every = trainer.log_every_n_steps
        return bool(every) and (self._batch_step % every == 0 or trainer.should_stop)

    def _eval_due(self, trainer: Any) -> bool:
        every = trainer.log_every_n_steps
        return bool(every) and (self._eval_batch % every == 0 or trainer.should_stop)

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        self._eval_batch = 0

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self._eval_batch = 0

    def on_train_batch_start(self, trainer: Any, module: Any, batch: Any, batch_idx: int) -> None:
        self._batch_step = trainer.global_step + 1
        self._log(trainer, "on_train_batch_start", self._train_due(trainer), self._batch_step)

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        self._log(trainer, "on_train_batch_end", self._train_due(trainer), self._batch_step)

    def on_validation_batch_start(
        self, trainer: Any, module: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._eval_batch += 1
        self._log(trainer, "on_validation_batch_start", self._eval_due(trainer), trainer.global_step)

    def on_validation_batch_end(
        self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._log(trainer, "on_validation_batch_end", self._eval_due(trainer), trainer.global_step)

    def on_test_batch_start(
        self, trainer: Any, module: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._eval_batch += 1
        self._log(trainer, "on_test_batch_start", self._eval_due(trainer), trainer.global_step)

    def on_test_batch_end(
        self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._log(trainer, "on_test_batch_end", self._eval_due(trainer), trainer.global_step)
