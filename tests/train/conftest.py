"""The process helpers of tests/distributed (_dist.py) and the S3 server of tests/fs (_s3.py) serve these
tests too: they start real drivers, and a run may store its results on the test S3 server."""

import os
import sys

_TESTS = os.path.dirname(os.path.dirname(__file__))
sys.path.insert(0, os.path.join(_TESTS, "distributed"))
sys.path.insert(0, os.path.join(_TESTS, "fs"))

from _s3 import bucket, s3_server  # noqa: E402,F401  (fixtures used by name)
