#!/usr/bin/env bash
# Set up .venv with the test extras and run the whole suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev,ray
bash scripts/fashion_mnist.sh
bash scripts/test_servers.sh
# --durations: every CI log ends with the slowest tests, where the suite's time goes.
exec .venv/bin/python -m pytest --durations=30 "$@"
