"""Turn benchmark results into the performance table.

    python benchmarks/report.py                          # latest results -> benchmarks/results/latest.md
    python benchmarks/report.py --update-readme README.md   # and between the README's bench markers
    python benchmarks/report.py results/<stamp>.json     # a given run instead of the latest

Standard library only, so any Python can regenerate the table from the JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

from harness import FULL_ONLY, Bench, Case, from_dict, ratios, summary

RESULTS = Path(__file__).resolve().parent / "results"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def number(value: float) -> str:
    if abs(value) >= 999.5:  # 999.7 prints as 1,000, not 1000
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def table(benches: list[Bench], full: dict | None = None) -> str:
    """One markdown table: a row per case, the ember/case ratio on each competitor's row.

    ``full`` (a full run's results) fills the rows a quick run left out, marked with its date.
    """
    lines = [
        "| benchmark | case | version | median | min–max | n | ember / case |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for bench in benches:
        paired = ratios(bench)
        arrow = "higher is better" if bench.higher_is_better else "lower is better"
        first = f"**{bench.title}** ({bench.unit}, {arrow})"
        for case in bench.cases:
            if case.status == FULL_ONLY:
                case = _from_full_run(full, bench.name, case)
            if case.status == "ok" and case.samples:
                median, low, high = summary(case.samples)
                cells = [number(median), f"{number(low)}–{number(high)}", str(len(case.samples))]
            else:
                cells = [case.status if case.status != "ok" else "no samples", "", ""]
            ratio = "; ".join(
                f"{number(m)}× ({number(lo)}–{number(hi)})" + ("" if _single(bench, other) else f" for {em}")
                for em, other, m, lo, hi in paired
                if other == case.label
            )
            unit = f" [{case.unit}]" if case.unit != bench.unit else ""
            label = case.label + unit + (f" — {case.note}" if case.note else "")
            lines.append(f"| {first} | {label} | {case.version} | {' | '.join(cells)} | {ratio} |")
            first = ""
    return "\n".join(lines)


def _from_full_run(full: dict | None, bench_name: str, case: Case) -> Case:
    """The same case as measured by the latest full run, if there is one (no ratio: not paired)."""
    for bench in (full or {}).get("benchmarks", []):
        for found in from_dict(dict(bench)).cases if bench["name"] == bench_name else []:
            if found.label == case.label and found.status == "ok" and found.samples:
                return replace(found, note=f"full run of {full['date']}, not in this quick run")
    return replace(case, status=f"{FULL_ONLY}: no full run in {RESULTS.name}/ yet")


def _single(bench: Bench, competitor: str) -> bool:
    return sum(other == competitor for _, other in bench.pairs) == 1


def render(run: dict) -> str:
    """The table with the line that says where, when and how it was measured."""
    benches = [from_dict(dict(b)) for b in run["benchmarks"]]
    m = run["machine"]
    header = (
        f"Measured {run['date']} on {m['cpu']} ({m['cores']} cores, {m['memory_gib']} GiB), {m['os']}; "
        f"Python {m['python']}, torch {m['torch']}, Lightning {m['lightning']}, Ray {m['ray']}, "
        f"ember {m['ember']} ({m['ember_commit']}); load average {' → '.join(map(str, m['load_average']))}. "
        f"Command: `{run['command']}`."
    )
    note = (
        "Ratios are ember / case, computed run by run (runs alternate) and summarised as median "
        "(min–max); for times below 1 means ember is faster, for rates above 1 means ember is faster."
    )
    full = _latest_full_run() if run.get("mode") == "quick" else None
    return f"{header}\n\n{table(benches, full)}\n\n{note}\n"


def _latest_full_run() -> dict | None:
    runs = sorted(p for p in RESULTS.glob("*.json") if "-only-" not in p.name)
    for path in reversed(runs):
        run = json.loads(path.read_text())
        if run.get("mode") == "full":
            return run
    return None


def latest() -> Path:
    runs = sorted(p for p in RESULTS.glob("*.json") if "-only-" not in p.name)  # full suites only
    if not runs:
        sys.exit(f"no results in {RESULTS}: run .venv-bench/bin/python benchmarks/run.py first")
    return runs[-1]


def update_readme(readme: Path, text: str) -> None:
    content = readme.read_text()
    if START not in content or END not in content:
        sys.exit(f"{readme} has no {START} ... {END} markers; add them where the table should go")
    pattern = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)
    readme.write_text(pattern.sub(lambda _: f"{START}\n{text}{END}", content, count=1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("results", nargs="?", type=Path, help="a results JSON (default: the latest)")
    parser.add_argument(
        "--update-readme", type=Path, metavar="README", help="replace the text between the markers"
    )
    options = parser.parse_args()
    path = options.results or latest()
    text = render(json.loads(path.read_text()))
    (RESULTS / "latest.md").write_text(text)
    print(text)
    print(f"from {path} -> {RESULTS / 'latest.md'}", file=sys.stderr)
    if options.update_readme:
        update_readme(options.update_readme, text)
        print(f"updated {options.update_readme}", file=sys.stderr)


if __name__ == "__main__":
    main()
