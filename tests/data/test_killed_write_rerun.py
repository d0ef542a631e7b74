"""A write killed before it committed leaves files that are ember's own: running the same script again
removes them and succeeds, and what earlier writes committed stays intact (no mode='overwrite' needed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import ember

SCRIPT = Path(__file__).parent / "_killed_write_script.py"
REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def write(out: Path, start: int, count: int, pause: float = 0.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(out), str(start), str(count), str(pause)],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )


def parts(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith("part-"))


@pytest.mark.slow  # three writer processes, one SIGKILLed
@pytest.mark.timeout(240)
def test_rerunning_a_sigkilled_write_cleans_its_files_and_keeps_the_committed_ones(tmp_path):
    out = tmp_path / "out"
    first = write(out, 0, 20)
    assert first.returncode == 0, first.stderr[-2000:]
    committed = {name: (out / name).read_bytes() for name in parts(out)}
    assert len(committed) == 2

    killed = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(out), "1000", "200", "0.05", "40"],
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 90
        while len(parts(out)) < 4:  # the killed write has put files of its own in the folder
            assert killed.poll() is None, killed.communicate()[1].decode()[-2000:]
            assert time.monotonic() < deadline, "the killed write never wrote its first files"
            time.sleep(0.05)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(10)
    finally:
        if killed.poll() is None:
            os.killpg(killed.pid, signal.SIGKILL)
        killed.communicate()
    manifest = json.loads((out / "_ember_write.json").read_text())
    assert [w["state"] for w in manifest["writes"]] == ["committed", "pending"]
    with pytest.raises(ember.errors.DataError, match="did not finish"):  # readers still refuse a half write
        ember.data.read_parquet(str(out)).count()

    rerun = write(out, 1000, 30)  # the same job again, as a user would: no mode='overwrite'
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert "of an earlier write into" in rerun.stderr and "that was killed before it finished" in rerun.stderr
    for name, data in committed.items():
        assert (out / name).read_bytes() == data  # committed data intact
    ids = sorted(pq.read_table(out / name)["id"][0].as_py() for name in parts(out))
    rows = sorted(row["id"] for row in ember.data.read_parquet(str(out)).take_all())
    assert rows == list(range(20)) + list(range(1000, 1030)), ids
    assert [w["state"] for w in json.loads((out / "_ember_write.json").read_text())["writes"]] == [
        "committed"
    ] * 2
