"""Benchmark 2b: Python function calls a framework adds to every training step — a deterministic figure.

On this 2-core machine step timings move by ±100 µs between runs, so a goal of "≤ 30 µs of overhead"
cannot be resolved by a clock. Counting the Python function calls the interpreter makes per step can:
`sys.setprofile` sees every 'call' event (Python functions only; C functions are 'c_call' and not counted).
Counting starts inside training step `start` and stops inside training step `stop` of one fit, so set-up,
warm-up (the first two logging flushes included) and teardown are excluded and exactly `stop - start` whole
step cycles are counted: the framework's loop, hooks, logging, progress bar and checkpoint bookkeeping, plus
the model's own forward/loss/backward/optimizer calls, which the hand-written loop also makes. A framework's
figure is its calls per step minus the hand-written loop's.

The model is nn.Linear(784, 10) on in-memory batches of 64 (no data loading), `self.log` on every
step; "defaults" is each Trainer with its default settings (progress bar, logger, checkpointing on),
"lean" turns those off. Calls are split by where the called function lives (the framework's own
files, torch, elsewhere), so a change in ember's count points at ember's code. Only the main thread
is counted: a progress bar's refresh thread, if any, is not. Output goes to /dev/null, as in a batch
job's log: ember's progress bar then prints a line every 15 s (none inside the window), while
Lightning's TQDMProgressBar still updates tqdm every step (its tqdm calls are in its figure).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from harness import Bench, main, new_bench, quiet, version
from workloads import Tiny, fashion_tensors, framework

LEAN = {
    "logger": False,
    "enable_progress_bar": False,
    "enable_checkpointing": False,
    "enable_model_summary": False,
}


class CallCounter:
    """Counts 'call' events between `start()` and `stop()`, by the top-level package of the callee."""

    def __init__(self, roots: dict[str, str]) -> None:
        self.roots = roots  # package name -> its folder, for attributing calls
        self.by_origin: Counter[str] = Counter()

    def _profile(self, frame, event, arg) -> None:  # noqa: ANN001 (sys.setprofile signature)
        if event == "call":
            self.by_origin[self._origin(frame.f_code.co_filename)] += 1

    def _origin(self, filename: str) -> str:
        for name, root in self.roots.items():
            if filename.startswith(root):
                return name
        return "other"

    def start(self) -> None:
        sys.setprofile(self._profile)

    def stop(self) -> None:
        sys.setprofile(None)


def package_roots() -> dict[str, str]:
    roots = {"torch": os.path.dirname(torch.__file__) + os.sep}
    for name in (
        "ember",
        "lightning",
        "pytorch_lightning",
        "lightning_fabric",
        "torchmetrics",
        "tqdm",
        "rich",
    ):
        try:
            module = __import__(name)
        except ImportError:
            continue
        roots[name] = os.path.dirname(module.__file__) + os.sep
    return roots


class Batches:
    def __init__(self, batches: list) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator:
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)


def counted_module(base: type, counter: CallCounter, start: int, stop: int) -> torch.nn.Module:
    """Tiny as a framework module that switches the counter on at step `start` and off at step `stop`."""

    class Model(base):
        def __init__(self) -> None:
            super().__init__()
            self.net = Tiny()
            self.step = 0

        def training_step(self, batch, batch_idx):  # noqa: ANN001
            self.step += 1
            if self.step == start:
                counter.start()
            elif self.step == stop:
                counter.stop()
            x, y = batch
            loss = F.nll_loss(self.net(x), y)
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01, momentum=0.5)

    return Model()


def hand_written(batches: Batches, counter: CallCounter, start: int, stop: int) -> None:
    """The classic script's loop, counted over the same steps."""
    model = Tiny()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    model.train()
    for step, (x, y) in enumerate(batches, start=1):
        if step == start:
            counter.start()
        elif step == stop:
            counter.stop()
            return
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        optimizer.step()


def count(name: str, setting: str, batches: Batches, start: int, stop: int) -> Counter[str] | None:
    counter = CallCounter(package_roots())
    if name == "hand-written loop":
        hand_written(batches, counter, start, stop)
        return counter.by_origin
    tool = framework(name)
    if tool is None:
        return None
    options = LEAN if setting == "lean" else {}
    model = counted_module(tool.Module, counter, start, stop)
    with tempfile.TemporaryDirectory() as root, quiet():
        trainer = tool.Trainer(
            max_steps=stop + 1, accelerator="cpu", devices=1, default_root_dir=root, **options
        )
        trainer.fit(model, train_dataloaders=batches)
    sys.setprofile(None)
    return counter.by_origin


def run(quick: bool) -> Bench:
    # Counting starts after two logging flushes (every 50 steps by default), so one-time work such as
    # a logger importing its library at its first flush stays out; the window is a whole number of
    # flush periods, so periodic work is counted in its true proportion.
    start, stop = (101, 301) if quick else (101, 1101)
    torch.set_num_threads(1)
    x, y = fashion_tensors(limit=64 * (stop + 2)).tensors
    one_pass = list(zip(x.split(64), y.split(64), strict=True))
    # The counted window must lie inside one epoch (an epoch end adds a checkpoint save, and the
    # hand-written loop would run out of batches): Fashion-MNIST's 937 batches are repeated when the
    # full run's 1,102 steps need more.
    batches = Batches((one_pass * (stop // len(one_pass) + 2))[: stop + 2])
    steps = stop - start

    bench = new_bench(
        "calls",
        "Python calls per training step: nn.Linear(784, 10), batch 64",
        "calls/step above hand-written",
    )
    base = count("hand-written loop", "", batches, start, stop)
    assert base is not None
    hand = sum(base.values()) / steps
    bench.case("hand-written loop", version("torch"), unit="calls/step").samples = [hand]
    for setting in ("defaults", "lean"):
        for name in ("ember", "Lightning"):
            label = f"{name} ({setting})"
            case = bench.case(label, version(name.lower(), name))
            counts = count(name, setting, batches, start, stop)
            if counts is None:
                case.status = "n/a (not installed)"
                continue
            case.samples = [sum(counts.values()) / steps - hand]
            own = sum(
                n
                for origin, n in counts.items()
                if origin.startswith(("ember", "lightning", "pytorch_lightning"))
            )
            case.note = f"{own / steps:.1f} in its own files; " + ", ".join(
                f"{origin} {n / steps:.1f}" for origin, n in counts.most_common()
            )
            bench.save()
    bench.compare("ember (defaults)", "Lightning (defaults)")
    bench.compare("ember (lean)", "Lightning (lean)")
    bench.save()
    return bench


if __name__ == "__main__":
    main(run)
