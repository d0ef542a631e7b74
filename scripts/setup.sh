#!/usr/bin/env bash
# Create (or reuse) .venv with ember installed in editable mode.
#   bash scripts/setup.sh            the library alone
#   bash scripts/setup.sh dev,ray    with the extras the test suite needs
# torch is pinned here (CPU build 2.13.0), not in ember's dependencies: users bring their own torch.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-}"
source scripts/python_choice.sh  # PYTHON: the interpreter a new .venv is built on, and why
VENV="${EMBER_VENV:-.venv}"
TORCH="torch==2.13.0"

if [ ! -x "$VENV/bin/python" ]; then
    if ! "$PYTHON" -m venv "$VENV" 2>/dev/null; then
        # Debian ships venv support separately; install it when we may, else say what to do.
        rm -rf "$VENV"
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
            "$PYTHON" -m venv "$VENV"
        else
            echo "error: '$PYTHON -m venv' failed; install python3-venv (apt-get install python3-venv) and re-run" >&2
            exit 1
        fi
    fi
fi

# Re-running is instant when nothing changed: the stamp records what was installed.
STAMP="$VENV/.ember-installed"
WANT="$TORCH [$EXTRAS] $(sha1sum pyproject.toml | cut -c1-12)"
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
    PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
    echo "$TORCH" > "$VENV/constraints.txt"
    # torch first: a bare `torch` requirement with no torch installed pulls the multi-GB CUDA build.
    "${PIP[@]}" "$TORCH"
    "${PIP[@]}" -c "$VENV/constraints.txt" -e ".${EXTRAS:+[$EXTRAS]}"
    echo "$WANT" > "$STAMP"
fi
