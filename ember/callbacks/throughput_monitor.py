"""ThroughputMonitor: batches, samples, items and FLOPs per second, logged as Lightning 2.6 names them.

How it runs, as Lightning's: each stage (train, validate, test, predict) has a `Throughput` of its own. Its
clock starts when the stage starts; after every batch the elapsed time and the running totals of batches,
samples (`batch_size_fn(batch)`), items (`length_fn(batch)`) and the module's `flops_per_batch` are added.
The rates are rolling averages over the last `window_size` updates, so they appear once that many batches
were seen. Metrics are named `<stage><separator><metric>`: `train/time`, `train/batches`, `train/samples`,
`train/lengths`, `train/device/batches_per_sec`, `train/device/samples_per_sec`, `train/device/items_per_sec`,
`train/device/flops_per_sec` (and, with several processes, `train/batches_per_sec`, ... for all of them).
Training logs after each optimizer step every `log_every_n_steps` steps (at the step ember logs its own
training metrics at, with `epoch`); evaluation every `log_every_n_steps` batches of a run, at the count of
the run's batches so far. The time spent validating is taken out of the training clock. Rank zero only.

``device/mfu`` (model FLOPs utilisation) needs the device's peak FLOPs: Lightning knows them for a list of
NVIDIA and TPU chips and logs no MFU on any other device (the CPU among them). ember knows no chip's peak, so
it logs no MFU anywhere, and warns once when the module has `flops_per_batch` on a GPU.
"""

from __future__ import annotations

import time
import warnings
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from ember.callbacks.callback import Callback
from ember.errors import ConfigError

#: Lightning's `Throughput` options that `ThroughputMonitor(**kwargs)` passes on.
THROUGHPUT_OPTIONS = ("window_size", "separator")


class Throughput:
    """Rolling throughput over the last `window_size` updates (Lightning's ``Throughput`` metrics and names).

    Example:
        >>> meter = Throughput(window_size=2)
        >>> meter.update(time=1.0, batches=1, samples=8)
        >>> meter.compute()
        {'time': 1.0, 'batches': 1, 'samples': 8}
        >>> meter.update(time=3.0, batches=2, samples=16)
        >>> meter.compute()["device/samples_per_sec"]
        4.0
    """

    def __init__(
        self,
        available_flops: float | None = None,
        world_size: int = 1,
        window_size: int = 100,
        separator: str = "/",
    ) -> None:
        if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 2:
            raise ConfigError(f"ThroughputMonitor(window_size={window_size!r}) should be an int > 1")
        if not isinstance(separator, str):
            raise ConfigError(f"ThroughputMonitor(separator={separator!r}) should be a str")
        self.available_flops, self.world_size, self.separator = available_flops, world_size, separator
        self._time: deque[float] = deque(maxlen=window_size)
        self._batches: deque[int] = deque(maxlen=window_size)
        self._samples: deque[int] = deque(maxlen=window_size)
        self._lengths: deque[int] = deque(maxlen=window_size)
        self._flops: deque[float] = deque(maxlen=window_size)

    def update(
        self,
        *,
        time: float,
        batches: int,
        samples: int,
        lengths: int | None = None,
        flops: float | None = None,
    ) -> None:
        """Totals so far (time in seconds since the start);
        `flops`: this device's FLOPs of the latest batch."""
        if samples < batches:
            raise ValueError(
                f"ThroughputMonitor: batch_size_fn gave {samples} samples in {batches} batches; a batch "
                "holds at least one sample"
            )
        if lengths is not None and lengths < samples:
            raise ValueError(
                f"ThroughputMonitor: length_fn gave {lengths} items in {samples} samples; a sample "
                "holds at least one item"
            )
        self._time.append(time)
        self._batches.append(batches)
        self._samples.append(samples)
        if lengths is not None:
            self._lengths.append(lengths)
        if flops is not None:
            self._flops.append(flops * self.world_size)

    def compute(self) -> dict[str, float]:
        """The totals, and the rates once the window is full (global ones only with several processes)."""
        sep, several = self.separator, self.world_size > 1
        metrics: dict[str, float] = {
            "time": self._time[-1],
            "batches": self._batches[-1],
            "samples": self._samples[-1],
        }
        if self._lengths:
            metrics["lengths"] = self._lengths[-1]
        elapsed = self._time[-1] - self._time[0]
        if len(self._time) == self._time.maxlen:
            for name, window in (
                ("batches", self._batches),
                ("samples", self._samples),
                ("items", self._lengths),
            ):
                if len(window) != window.maxlen:
                    continue
                per_device = (window[-1] - window[0]) / elapsed
                metrics[f"device{sep}{name}_per_sec"] = per_device
                if several:
                    metrics[f"{name}_per_sec"] = per_device * self.world_size
        if len(self._flops) == self._flops.maxlen:
            flops_per_sec = (
                sum(self._flops) - self._flops[0]
            ) / elapsed  # the first batch ran before the window
            if several:
                metrics["flops_per_sec"] = flops_per_sec
            metrics[f"device{sep}flops_per_sec"] = flops_per_sec / self.world_size
            if self.available_flops:
                metrics[f"device{sep}mfu"] = flops_per_sec / self.world_size / self.available_flops
        return metrics

    @property
    def last_time(self) -> float:
        """Seconds from the start to the latest update (0 before the first)."""
        return self._time[-1] if self._time else 0.0

    def reset(self) -> None:
        for window in (self._time, self._batches, self._samples, self._lengths, self._flops):
            window.clear()


class ThroughputMonitor(Callback):
    """Log throughput: `batch_size_fn(batch)` samples and `length_fn(batch)` items per batch, and the module's
    ``flops_per_batch`` attribute when it has one. ``window_size`` (default 100) and ``separator`` (default
    "/") are Lightning's ``Throughput`` options.

    Example:
        >>> from ember.callbacks import ThroughputMonitor
        >>> monitor = ThroughputMonitor(batch_size_fn=lambda batch: len(batch[0]), window_size=10)
        >>> ThroughputMonitor(batch_size_fn=len, available_flops=1e12)  # doctest: +NORMALIZE_WHITESPACE
        Traceback (most recent call last):
        ...
        ember.errors.ConfigError: ThroughputMonitor(available_flops=...): pass window_size and separator only
        ...
    """

    def __init__(
        self,
        batch_size_fn: Callable[[Any], int],
        length_fn: Callable[[Any], int] | None = None,
        **kwargs: Any,
    ) -> None:
        unknown = sorted(set(kwargs) - set(THROUGHPUT_OPTIONS))
        if unknown:
            raise ConfigError(
                f"ThroughputMonitor({', '.join(unknown)}=...): pass window_size and separator only "
                "(the device's peak FLOPs and the world size are the run's)"
            )
        if not callable(batch_size_fn) or (length_fn is not None and not callable(length_fn)):
            raise ConfigError(
                "ThroughputMonitor(batch_size_fn=..., length_fn=...) should be callables of a batch"
            )
        Throughput(**kwargs)  # its options are checked now, not when the fit starts
        self.kwargs, self.batch_size_fn, self.length_fn = kwargs, batch_size_fn, length_fn
        self.available_flops: float | None = None
        self._throughputs: dict[str, Throughput] = {}
        self._t0s: dict[str, float] = {}
        self._lengths: dict[str, int] = {}
        self._samples: dict[str, int] = {}
        self._batches: dict[str, int] = {}
        self._run_batches: dict[
            str, int
        ] = {}  # batches of this evaluation run: when to log, and the log step
        self._module_has_flops: bool | None = None

    def setup(self, trainer: Any, module: Any, stage: str) -> None:
        self._world_size = trainer.world_size
        self._on_gpu = trainer.strategy.root_device.type == "cuda"

    # ---- one stage's clock and totals ------------------------------------------------------------
    def _start(self, trainer: Any) -> None:
        stage = trainer.state.stage.value
        if stage not in self._throughputs:
            self._throughputs[stage] = Throughput(self.available_flops, self._world_size, **self.kwargs)
        if trainer.state.fn.value == "fit" or stage not in self._samples:
            self._throughputs[stage].reset()
            self._lengths[stage] = self._samples[stage] = self._batches[stage] = 0
        self._run_batches[stage] = 0
        self._t0s[stage] = time.perf_counter()

    def _update(self, trainer: Any, module: Any, batch: Any) -> None:
        stage = trainer.state.stage.value
        if self._on_gpu:
            torch.cuda.synchronize()  # the batch's kernels are done before the clock is read
        elapsed = time.perf_counter() - self._t0s[stage]
        flops = self._flops_per_batch(module)
        with torch.inference_mode():  # batch_size_fn or length_fn might compute on tensors that require grad
            if self.length_fn is not None:
                self._lengths[stage] += self.length_fn(batch)
            self._samples[stage] += self.batch_size_fn(batch)
        self._batches[stage] += 1
        self._throughputs[stage].update(
            time=elapsed,
            batches=self._batches[stage],
            samples=self._samples[stage],
            lengths=None if self.length_fn is None else self._lengths[stage],
            flops=flops,
        )

    def _flops_per_batch(self, module: Any) -> float | None:
        if self._module_has_flops is None:
            self._module_has_flops = hasattr(module, "flops_per_batch")
            if not self._module_has_flops:
                warnings.warn(
                    f"ThroughputMonitor: give {type(module).__name__} a `flops_per_batch` attribute or "
                    "property to log FLOPs per second",
                    stacklevel=2,
                )
            elif self._on_gpu:
                warnings.warn(
                    "ThroughputMonitor: ember does not know this GPU's peak FLOPs, so device/mfu is not "
                    "logged (flops_per_sec is)",
                    stacklevel=2,
                )
        return module.flops_per_batch if self._module_has_flops else None

    def _log(self, trainer: Any, step: int | None) -> None:
        stage = trainer.state.stage.value
        throughput = self._throughputs[stage]
        metrics: dict[str, float | int] = {
            f"{stage}{throughput.separator}{k}": v for k, v in throughput.compute().items()
        }
        if step is None:  # training: at the training metrics' step, with the epoch (Lightning adds it too)
            metrics["epoch"] = trainer.current_epoch  # an int, as Lightning writes it
            # Lightning's step is its count of batches that stepped
            # *before* this one: the step just taken, from 0
            step = max(trainer.global_step - 1, 0)
        trainer.log_metrics(metrics, step)

    # ---- training ----------------------------------------------------------------------------------
    def on_train_start(self, trainer: Any, module: Any) -> None:
        if trainer.is_global_zero:
            self._start(trainer)

    def on_train_batch_end(self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if not trainer.is_global_zero:
            return
        self._update(trainer, module, batch)
        stepped = (
            batch_idx + 1
        ) % trainer.accumulate_grad_batches == 0 or batch_idx + 1 == trainer.num_training_batches
        every = trainer.log_every_n_steps
        if stepped and every and (trainer.global_step % every == 0 or trainer.should_stop):
            self._log(trainer, None)

    # ---- evaluation ----------------------------------------------------------------------------------
    def _eval_start(self, trainer: Any) -> None:
        if trainer.is_global_zero and not trainer.sanity_checking:
            self._start(trainer)

    def _eval_batch_end(self, trainer: Any, module: Any, batch: Any) -> None:
        if not trainer.is_global_zero or trainer.sanity_checking:
            return
        self._update(trainer, module, batch)
        stage = trainer.state.stage.value
        self._run_batches[stage] += 1
        every = trainer.log_every_n_steps
        if every and (self._run_batches[stage] % every == 0 or trainer.should_stop):
            self._log(trainer, self._run_batches[stage])

    def on_validation_start(self, trainer: Any, module: Any) -> None:
        self._eval_start(trainer)

    def on_validation_batch_end(
        self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._eval_batch_end(trainer, module, batch)

    def on_validation_end(self, trainer: Any, module: Any) -> None:
        """A validation inside a fit: the training clock skips
        the time from training's last batch to its end."""
        if not trainer.is_global_zero or trainer.sanity_checking or trainer.state.fn.value != "fit":
            return
        training_finished = self._t0s["train"] + self._throughputs["train"].last_time
        self._t0s["train"] += (
            self._t0s["validate"] - training_finished + self._throughputs["validate"].last_time
        )

    def on_test_start(self, trainer: Any, module: Any) -> None:
        self._eval_start(trainer)

    def on_test_batch_end(
        self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._eval_batch_end(trainer, module, batch)

    def on_predict_start(self, trainer: Any, module: Any) -> None:
        self._eval_start(trainer)

    def on_predict_batch_end(
        self, trainer: Any, module: Any, outputs: Any, batch: Any, batch_idx: int, dataloader_idx: int = 0
    ) -> None:
        self._eval_batch_end(trainer, module, batch)
