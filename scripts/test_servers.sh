#!/usr/bin/env bash
# Install the servers the test suite starts on 127.0.0.1 when they are missing and we may (root or sudo):
# PostgreSQL (tests/data/test_sql.py). The S3 (moto) and MLflow servers come with the `dev` extra.
# Without apt-get or rights, the PostgreSQL test skips and says why.
set -euo pipefail
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null && { [ -z "$SUDO" ] || command -v sudo >/dev/null; }; then
    $SUDO apt-get install -y -qq postgresql >/dev/null 2>&1 \
        || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq postgresql >/dev/null 2>&1; } \
        || echo "note: could not install postgresql; tests/data/test_sql.py's PostgreSQL test will skip" >&2
fi
exit 0
