#!/usr/bin/env bash
# Create .venv-bench: ember plus the tools it is compared with (never ember dependencies).
# Usage: bash benchmarks/setup.sh        (from anywhere; idempotent, re-running reuses the venv)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/python_choice.sh  # PYTHON: the interpreter, as scripts/setup.sh chooses it
VENV=.venv-bench

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
# Every install below keeps torch at the pinned CPU build.
echo "torch==2.13.0" > "$VENV/constraints.txt"
PIP="$VENV/bin/python -m pip install --quiet -c $VENV/constraints.txt"
# torch first, pinned: a bare `torch` requirement would pull the multi-GB CUDA build.
$PIP "torch==2.13.0"
# compat mode: a plain path entry, so packages added to the checkout later are found too.
$PIP -e . --config-settings editable_mode=compat
# The competitors (lightning provides `lightning.pytorch`, the name the docs use today).
# torch is already satisfied, so they keep the CPU build.
$PIP lightning pytorch-lightning "ray[data,train]" pandas pyarrow
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
for name in ("torch", "lightning", "ray", "pyarrow", "pandas"):
    print(f"{name:18} {md.version(name)}")
PY
echo "ready: $VENV/bin/python benchmarks/run.py --quick"
