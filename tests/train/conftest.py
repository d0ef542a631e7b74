"""The process helpers of tests/distributed (_dist.py) serve these tests too: they start real drivers."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "distributed"))
