# Sourced by scripts/setup.sh and benchmarks/setup.sh: sets PYTHON, the interpreter a new virtual
# environment is built on.
#   $PYTHON when set (PYTHON=python3.12 bash scripts/setup.sh);
#   else the distribution's /usr/bin/python3 when it is Python 3.10 or newer;
#   else python3 on PATH.
# Why the distribution's first: Debian's Python (Ubuntu's and Fedora's too) is built with profile-guided
# and link-time optimization; a pyenv or source build without --enable-optimizations is not. On the 2-core
# development machine pyenv's 3.11.7 comes first on PATH, and it ran the same work ~1.5x slower than
# Debian's 3.11.2 (docs/testing.md, "The interpreter"): `import ray.data` 1.74 -> 1.12 CPU-s,
# `import lightning` 9.1 -> 7.2, a JSON round trip 0.27 -> 0.12 s.
if [ -z "${PYTHON:-}" ]; then
    if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null
    then
        PYTHON=/usr/bin/python3
    else
        PYTHON=python3
    fi
fi
