#!/usr/bin/env bash
# Set up .venv with the test extras and run the whole suite. Extra arguments go to pytest.
# EMBER_TEST_WORKERS pytest-xdist workers (default 2: both cores of the 2-core machine; 0: this one process).
# tests/conftest.py keeps the tests that must share a process or a fixture on one worker (xdist groups,
# `--dist loadgroup`) and splits the Ray tests into one share per worker (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,ray
bash scripts/fashion_mnist.sh
bash scripts/test_servers.sh
# Python's bytecode cache on for the run: an environment that sets PYTHONDONTWRITEBYTECODE (this machine's
# image does) made every process the suite starts (CLI runs, ranks, Ray's workers: hundreds) compile
# ember's modules from source again: `import ember.data` 0.66 CPU-s against 0.40 with the cache.
unset PYTHONDONTWRITEBYTECODE
# --durations: every CI log ends with the slowest tests, where the suite's time goes.
exec .venv/bin/python -m pytest -n "${EMBER_TEST_WORKERS:-2}" --durations=30 "$@"
