"""Run every benchmark, print one table, and keep the results.

    .venv-bench/bin/python benchmarks/run.py [--quick] [--only NAME]

Each benchmark runs in its own process under a time limit, so one tool that hangs is reported as
"timeout" and the rest of the suite goes on. Results go to benchmarks/results/<timestamp>.json
(with the machine they were measured on) and the table to benchmarks/results/latest.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

from harness import FULL_ONLY, NOT_BUILT, REPO, TIMEOUT, Bench, Case, from_dict, to_dict, version, write_json
from report import RESULTS, render


class Entry(NamedTuple):
    file: str  # benchmarks/<file>.py
    quick: int  # time limit in seconds with --quick (a guard against hangs, not the expected time)
    full: int  # time limit in seconds without


# One line per benchmark; a new benchmark file is added here.
REGISTRY = [
    Entry("bench_train_step", quick=120, full=900),  # 1. step time: hand-written vs ember vs Lightning
    Entry("bench_overhead", quick=90, full=600),  # 2. framework µs/step on nn.Linear(784, 10)
    Entry("bench_calls", quick=90, full=300),  # 2b. Python calls per step above hand-written (deterministic)
    Entry("bench_startup", quick=180, full=1200),  # 3. import and time to first optimizer step
    Entry(
        "bench_data_feed", quick=120, full=600
    ),  # 4. parquet batches of 256: ember, pyarrow, DataLoader, Ray
    Entry(
        "bench_data_startup", quick=150, full=900
    ),  # 4b. first batch and memory added: ember, DataLoader, Ray
    Entry(
        "bench_data_calls", quick=120, full=300
    ),  # 4g. function calls per batch: ember vs the pyarrow bound
    Entry("bench_map_batches", quick=90, full=600),  # 4c. CPU-heavy Python UDF on 1 and 2 workers
    Entry(
        "bench_out_of_core", quick=600, full=3600
    ),  # 4d. shuffle/sort/groupby past the memory budget vs Ray Data
    Entry("bench_images", quick=240, full=1500),  # 4e. image folder -> decode, resize, normalize -> torch
    Entry("bench_ray_pipeline", quick=420, full=1800),  # 4f. ember.data on a 2-node Ray cluster vs Ray Data
    Entry("bench_inference", quick=150, full=600),  # 5. pool of 2 workers: ember vs plain loop vs Ray Data
    Entry("bench_resume", quick=90, full=600),  # 6. fit(ckpt_path="last") to next step; bitwise identical?
    Entry("bench_ddp", quick=180, full=1200),  # 7. DDP, 2 processes: ember vs Lightning vs Ray Train; 2 vs 1
    Entry(
        "bench_torch_trainer", quick=240, full=900
    ),  # 8. TorchTrainer spawn to first step: ember vs Ray Train
    Entry("bench_torch_trainer_cluster", quick=600, full=1500),  # 8b. the same across a 2-node Ray cluster
]


def run_one(entry: Entry, quick: bool, logs: Path) -> Bench:
    out, log = logs / f"{entry.file}.json", logs / f"{entry.file}.log"
    command = [sys.executable, str(REPO / "benchmarks" / f"{entry.file}.py"), "--out", str(out)]
    command += ["--quick"] if quick else []
    limit = entry.quick if quick else entry.full
    with log.open("w") as sink:
        child = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True
        )
        try:
            child.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, 9)  # the bench and whatever it started (Ray, workers)
            child.wait()
    if not out.exists():
        tail = " ".join(log.read_text().strip().splitlines()[-1:]) or f"exit {child.returncode}"
        status = TIMEOUT if child.returncode == -9 else f"error: {tail}"[:160]
        return Bench(entry.file, entry.file, "", cases=[Case("(all cases)", "", "", status=status)])
    bench = from_dict(json.loads(out.read_text()))
    if child.returncode != 0:  # killed or crashed: what was measured stays, the rest says why
        why = "timeout" if child.returncode == -9 else f"error: exit {child.returncode}"
        for case in bench.cases:
            if case.status != "ok":
                continue
            if case.label == bench.running and not case.samples:
                case.status = why
            elif case.label == bench.running:
                case.note = f"{why} in run {len(case.samples) + 1}"
            elif not case.samples:
                case.status = f"not run ({why} earlier)"
    return bench


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO).stdout.strip()


def machine() -> dict:
    cpu = next(
        (line.split(":", 1)[1].strip() for line in _lines("/proc/cpuinfo") if line.startswith("model name")),
        platform.processor(),
    )
    memory = next(
        (int(line.split()[1]) for line in _lines("/proc/meminfo") if line.startswith("MemTotal")), 0
    )
    commit = _git("rev-parse", "--short", "HEAD")
    # Edited tracked files make the commit "-dirty"; the
    # results folder does not (every run rewrites latest.md).
    if commit and _git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)benchmarks/results"
    ):
        commit += "-dirty"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": round(memory / 2**20),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        **{
            name: version(name).split(" ", 1)[1] for name in ("torch", "lightning", "ray", "pyarrow", "ember")
        },
        "ember_commit": commit.strip(),
        "load_average": round(os.getloadavg()[0], 2),  # above the core count, other work was running
    }


def _lines(path: str) -> list[str]:
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small step counts, under 3 minutes on 2 cores")
    parser.add_argument("--only", metavar="NAME", help="run one benchmark, e.g. train_step or bench_startup")
    options = parser.parse_args()
    entries = [e for e in REGISTRY if options.only in (None, e.file, e.file.removeprefix("bench_"))]
    if not entries:
        sys.exit(f"no benchmark named {options.only!r}; known: {', '.join(e.file for e in REGISTRY)}")

    stamp = datetime.datetime.now().astimezone()
    host = machine()
    benches = []
    with tempfile.TemporaryDirectory(prefix="ember-bench-") as logs:
        for number, entry in enumerate(entries, 1):
            print(f"[{number}/{len(entries)}] {entry.file} ...", file=sys.stderr, flush=True)
            start = time.perf_counter()
            benches.append(run_one(entry, options.quick, Path(logs)))
            print(f"   {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
            if any(c.status not in ("ok", NOT_BUILT, FULL_ONLY) for c in benches[-1].cases):
                _keep_log(Path(logs) / f"{entry.file}.log")

    run = {
        "date": stamp.strftime("%Y-%m-%d %H:%M %Z"),
        "command": " ".join(["python", "benchmarks/run.py", *sys.argv[1:]]),
        "mode": "quick" if options.quick else "full",
        "machine": {**host, "load_average": [host["load_average"], round(os.getloadavg()[0], 2)]},
        "benchmarks": [to_dict(b) for b in benches],
    }
    name = stamp.strftime("%Y%m%d-%H%M%S") + (f"-only-{options.only}" if options.only else "")
    write_json(RESULTS / f"{name}.json", run)
    text = render(run)
    if not options.only:
        (RESULTS / "latest.md").write_text(text)
    print(text)
    print(f"results: {RESULTS / name}.json", file=sys.stderr)


def _keep_log(log: Path) -> None:
    """Copy the log of a benchmark that had trouble where it survives the run (not committed)."""
    kept = Path(tempfile.gettempdir()) / "ember-bench-logs" / log.name
    kept.parent.mkdir(exist_ok=True)
    kept.write_text(log.read_text())
    print(f"   trouble: log kept at {kept}", file=sys.stderr)


if __name__ == "__main__":
    main()
