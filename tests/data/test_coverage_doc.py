"""docs/data.md's coverage table is what scripts/data_coverage.py generates from the installed Ray."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # imports Ray Data (~15 s)
def test_the_coverage_table_in_docs_is_current():
    pytest.importorskip("ray.data", reason="the table is generated from the installed Ray")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "scripts/data_coverage.py", "--check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    text = (ROOT / "docs" / "data.md").read_text()
    assert "| Dataset | `with_column` | present |" in text
    assert "| ray.data | `read_tfrecords` | differs | refuses `tf_schema` |" in text
    assert "| Dataset | `mix` | present |" in text and "| ray.data | `RandomSeedConfig` | present |" in text
    assert "| ray.data | `read_avro` | absent | file format not implemented yet |" in text
