#!/usr/bin/env bash
# The main job: set up .venv, train the classic Net on Fashion-MNIST, print the test accuracy.
# Extra arguments go to `ember fit`, e.g. `bash scripts/main.sh --epochs 1`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ "${EMBER_DOWNLOAD:-0}" = 1 ]; then
    set -- "$@" --set data.init_args.download=true
else
    bash scripts/fashion_mnist.sh
fi
exec .venv/bin/ember fit --config examples/fashion_mnist/config.yaml "$@"
