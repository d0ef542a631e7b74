#!/usr/bin/env bash
# Make sure Fashion-MNIST (IDX files) is on disk under /usr/share/datasets/fashion-mnist.
set -euo pipefail
DIR=/usr/share/datasets/fashion-mnist
[ -f "$DIR/t10k-labels-idx1-ubyte.gz" ] && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null && { [ -z "$SUDO" ] || command -v sudo >/dev/null; }; then
    $SUDO apt-get install -y -qq dataset-fashion-mnist >/dev/null 2>&1 \
        || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq dataset-fashion-mnist >/dev/null; }
fi
if [ ! -f "$DIR/t10k-labels-idx1-ubyte.gz" ]; then
    echo "Fashion-MNIST is not in $DIR and could not be installed (apt-get install dataset-fashion-mnist)." >&2
    echo "The main job can still download it: EMBER_DOWNLOAD=1 bash scripts/main.sh" >&2
    exit 1
fi
