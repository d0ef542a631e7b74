#!/usr/bin/env bash
# Set up .venv with the test extras and run the whole suite. Extra arguments go to pytest.
# EMBER_TEST_WORKERS pytest-xdist workers (default 0: this one process). On the 2-core machine 3 workers
# were slower than one process (docs/testing.md: each worker starts its own Ray, and they share 2 cores);
# on a machine with more cores, EMBER_TEST_WORKERS=N runs the suite on N workers, the tests that must share
# a process or a fixture kept on one worker by tests/conftest.py (xdist groups, `--dist loadgroup`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,ray
bash scripts/fashion_mnist.sh
bash scripts/test_servers.sh
# --durations: every CI log ends with the slowest tests, where the suite's time goes.
exec .venv/bin/python -m pytest -n "${EMBER_TEST_WORKERS:-0}" --durations=30 "$@"
