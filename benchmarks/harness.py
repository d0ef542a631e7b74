"""The shared machinery of the benchmarks: alternating runs, timeouts, statistics, JSON.

A benchmark builds a ``Bench`` (its cases, their unit, which pairs to compare) and hands a runner
per case to ``alternate``, which warms every case up, then runs them in turn A B C A B C ... and
records one sample per run. A runner of ``None`` is a tool that is not built yet: its cells read
"n/a (not built)". The bench saves itself after every sample, so when the suite kills a hanging
benchmark, what it measured so far survives and the hanging case reads "timeout".

This module imports only the standard library: start-up benchmarks import it in their children.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Ray reads its settings when it is first imported, so they are set before any benchmark can import
# it: no cluster mode for this single machine, no usage reporting over the network.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

NOT_BUILT = "n/a (not built)"
TIMEOUT = "timeout"
FULL_ONLY = "full run only"  # a slow case --quick leaves out; the table shows it from the latest full run
REPO = Path(__file__).resolve().parent.parent


@dataclass
class Case:
    label: str
    version: str
    unit: str
    samples: list[float] = field(default_factory=list)
    status: str = "ok"  # ok | n/a (not built) | timeout | error: ...
    note: str = ""


@dataclass
class Bench:
    name: str
    title: str
    unit: str
    higher_is_better: bool = False
    cases: list[Case] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (ember case, competitor case)
    running: str | None = None  # the case being measured right now; "timeout" if we die in it
    out: str | None = None

    def case(self, label: str, version: str, unit: str | None = None) -> Case:
        case = Case(label, version, unit or self.unit)
        self.cases.append(case)
        return case

    def get(self, label: str) -> Case:
        return next(c for c in self.cases if c.label == label)

    def compare(self, ember: str, *competitors: str) -> None:
        self.pairs += [(ember, c) for c in competitors]

    def save(self) -> None:
        """Write the bench as JSON to --out, atomically (the suite may read it after a kill)."""
        if self.out:
            write_json(Path(self.out), to_dict(self))


def to_dict(bench: Bench) -> dict:
    data = asdict(bench)
    data.pop("out")
    return data


def from_dict(data: dict) -> Bench:
    cases = [Case(**c) for c in data.pop("cases")]
    return Bench(**{**data, "cases": cases, "pairs": [tuple(p) for p in data["pairs"]]})


def alternate(
    bench: Bench,
    runners: dict[str, Callable[[], float] | None],
    rounds: int,
    warmup: int = 1,
    timeout: float = 120.0,
    at_most: dict[str, int] | None = None,
    cold: Collection[str] = (),
) -> None:
    """Warm every case up, then run the cases in turn, ``rounds`` times, one sample per run.

    ``at_most`` caps the timed runs of slow cases (their later rounds are skipped); cases in
    ``cold`` skip the warm-up, so their first run is timed.
    """
    live = {}
    for label, runner in runners.items():
        if runner is None:
            bench.get(label).status = NOT_BUILT
        else:
            live[label] = runner
    bench.save()
    for index in range(warmup + rounds):
        for label, runner in list(live.items()):
            case = bench.get(label)
            if len(case.samples) >= (at_most or {}).get(label, rounds):
                continue
            if index < warmup and label in cold:
                continue
            bench.running = label
            bench.save()
            started = time.perf_counter()
            try:
                with deadline(timeout):
                    value = runner()
            except TimeoutError:
                case.status = TIMEOUT
            except Exception as err:  # one broken tool must not stop the others
                traceback.print_exc()
                case.status = f"error: {type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"[
                    :160
                ]
            else:
                if index >= warmup or label in cold:
                    case.samples.append(value)
            # where the wall time goes (in the benchmark's log): what to trim when a run is too slow
            print(f"{label}: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
            if case.status != "ok":
                del live[label]
            bench.running = None
            bench.save()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the main thread after ``seconds`` (the suite's kill is the backstop)."""

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"no result after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- statistics ---------------------------------------------------------------------------------


def summary(samples: list[float]) -> tuple[float, float, float]:
    return statistics.median(samples), min(samples), max(samples)


def ratios(bench: Bench) -> list[tuple[str, str, float, float, float]]:
    """(ember case, competitor, median, min, max) of ember/competitor for every compared pair.

    Runs alternate, so sample i of two cases were taken moments apart: the ratio is taken run by
    run, which cancels most of the machine's drift, then summarised.
    """
    result = []
    for ember_label, other in bench.pairs:
        a, b = bench.get(ember_label), bench.get(other)
        paired = [x / y for x, y in zip(a.samples, b.samples, strict=False) if y]
        if a.status == "ok" and b.status == "ok" and paired:
            result.append((ember_label, other, *summary(paired)))
    return result


# --- processes ----------------------------------------------------------------------------------


def run_child(args: list[str], timeout: float, env: dict[str, str] | None = None) -> dict:
    """Run ``python args...`` and return the JSON object it prints last; TimeoutError if it hangs."""
    import subprocess

    here = str(Path(__file__).resolve().parent)  # so children (and Ray's workers) find workloads.py
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])),
    }
    environment.update(env or {})
    try:
        done = subprocess.run(
            [sys.executable, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        raise TimeoutError(f"{args[0]} ran past {timeout:.0f} s") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"child exited {done.returncode}: {tail}")
    return json.loads(lines[-1])


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)


def main(run: Callable[[bool], Bench]) -> None:
    """Command line of every bench file: ``python benchmarks/bench_x.py [--quick] [--out FILE]``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", help="write the result here as JSON (the suite passes this)")
    options = parser.parse_args()
    if options.out:
        os.environ["BENCH_OUT"] = options.out
    start = time.perf_counter()
    bench = run(options.quick)
    bench.save()
    if not options.out:
        from report import table

        print(table([bench]))
    print(f"{bench.name}: {time.perf_counter() - start:.0f} s", file=sys.stderr)


def new_bench(name: str, title: str, unit: str, higher_is_better: bool = False) -> Bench:
    return Bench(name, title, unit, higher_is_better, out=os.environ.get("BENCH_OUT"))


def version(distribution: str, label: str | None = None) -> str:
    """``"<label> <version>"`` of an installed distribution, or ``"<label> (not installed)"``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return f"{label or distribution} {installed(distribution)}"
    except PackageNotFoundError:
        return f"{label or distribution} (not installed)"


@contextmanager
def quiet() -> Iterator[None]:
    """Silence a tool's progress bars, banners, warnings and log lines while it is being timed."""
    import contextlib
    import logging
    import warnings

    with open(os.devnull, "w") as devnull, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            with contextlib.redirect_stdout(devnull), contextlib.redirect_stderr(devnull):
                yield
        finally:
            logging.disable(logging.NOTSET)
