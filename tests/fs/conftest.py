"""Fixtures of the object-storage tests: the moto S3 server (see _s3.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _s3 import bucket, s3_server  # noqa: E402,F401  (fixtures used by name)
