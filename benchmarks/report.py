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
from pathlib import Path

from harness import Bench, from_dict, ratios, summary

RESULTS = Path(__file__).resolve().parent / "results"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def number(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def table(benches: list[Bench]) -> str:
    """One markdown table: a row per case, the ember/case ratio on each competitor's row."""
    lines = [
        "| benchmark | case | version | median | min–max | n | ember / case |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    for bench in benches:
        paired = ratios(bench)
        arrow = "higher is better" if bench.higher_is_better else "lower is better"
        first = f"**{bench.title}** ({bench.unit}, {arrow})"
        for case in bench.cases:
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
    return f"{header}\n\n{table(benches)}\n\n{note}\n"


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
