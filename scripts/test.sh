#!/usr/bin/env bash
# Set up .venv with the test extras and run the whole suite. Extra arguments go to pytest.
# The suite runs on EMBER_TEST_WORKERS pytest-xdist workers (default 3, measured best on a 2-core machine;
# 0 runs it in this one process). Tests that must share a process or a fixture are kept on one worker by
# tests/conftest.py (xdist groups, `--dist loadgroup` in pyproject.toml). See docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,ray
bash scripts/fashion_mnist.sh
bash scripts/test_servers.sh
# --durations: every CI log ends with the slowest tests, where the suite's time goes.
exec .venv/bin/python -m pytest -n "${EMBER_TEST_WORKERS:-3}" --durations=30 "$@"
