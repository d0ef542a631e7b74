"""The worker module of tests/processes/test_zygote.py: ``_zygote_probe REPORT HOW`` writes what it sees to
REPORT (JSON), then does HOW: an exit code, ``raise`` or ``sleep``."""

import atexit
import json
import os
import sys
import time
from pathlib import Path


def main(report: Path, how: str) -> None:
    atexit.register(lambda: (report.parent / "atexit-ran").write_text("yes"))
    seen = {
        "name": __name__,
        "argv": sys.argv,
        "orig_argv": sys.orig_argv,
        "cwd": os.getcwd(),
        "path0": sys.path[0],
        "variable": os.environ.get("EMBER_PROBE"),
        "ppid": os.getppid(),
        "preloaded": "colorsys" in sys.modules,
    }
    report.write_text(json.dumps(seen))
    print("probe says hello", flush=True)
    if how == "raise":
        raise RuntimeError("the probe was told to raise")
    if how == "sleep":
        time.sleep(120)
    sys.exit(int(how))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
