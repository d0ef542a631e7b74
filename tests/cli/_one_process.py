"""Run one script several times in ONE Python process, each time as `python SCRIPT ARGS...` would run it.

    python _one_process.py SCRIPT OUT.json '[["fit", "--help"], ["fit", "--x", "1"], ...]'
    python _one_process.py - OUT.json '[{"script": S, "argv": [...], "cwd": DIR}, ...]'

Used for the reference side (real Lightning) of the tests that compare a script's command-line behaviour:
importing Lightning costs ~8 s of CPU per process, and what these tests compare of each run does not depend
on a fresh interpreter. Each run gets `sys.argv = [SCRIPT, *ARGS]`, runs as `__main__` (runpy), with file
descriptors 1 and 2 redirected to files of its own (so the output of handlers bound to the real stderr at
import time is caught too), and ends with the exit code the interpreter would give: SystemExit's code (None:
0, an int: that int, anything else: printed to stderr, 1) or 1 with the traceback on stderr for any other
exception. OUT.json gets [[code, stdout, stderr], ...] in the order given. In the second form each run names
its own script (from the same folder) and working folder (OUT.json is then relative to the starting one).
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import tempfile
import traceback


def run_once(script: str, args: list[str]) -> list:
    sys.argv = [script, *args]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            try:
                runpy.run_path(script, run_name="__main__")
                code = 0
            except SystemExit as exited:
                if exited.code is None or isinstance(exited.code, int):
                    code = exited.code or 0
                else:
                    print(exited.code, file=sys.stderr)
                    code = 1
            except BaseException:  # noqa: BLE001 - an uncaught exception: as the interpreter, traceback and 1
                traceback.print_exc()
                code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        out.seek(0)
        err.seek(0)
        return [code, out.read(), err.read()]


def run_in(folder: str, script: str, args: list[str]) -> list:
    started = os.getcwd()
    os.chdir(folder)
    try:
        return run_once(script, args)
    finally:
        os.chdir(started)


if __name__ == "__main__":
    script, out_path, runs = sys.argv[1], os.path.abspath(sys.argv[2]), json.loads(sys.argv[3])
    if script == "-":
        sys.path[0] = os.path.dirname(os.path.abspath(runs[0]["script"]))  # the scripts' folder first
        results = [run_in(run["cwd"], os.path.abspath(run["script"]), run["argv"]) for run in runs]
    else:
        # the script's folder first, as `python SCRIPT`
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        results = [run_once(script, args) for args in runs]
    with open(out_path, "w") as f:
        json.dump(results, f)
