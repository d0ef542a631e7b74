"""Hugging Face tests never reach the Hub: offline mode, and caches in a private temporary folder."""

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
if "HF_HOME" not in os.environ:
    os.environ["HF_HOME"] = tempfile.mkdtemp(prefix="ember-hf-home-")
    atexit.register(shutil.rmtree, os.environ["HF_HOME"], ignore_errors=True)
os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"

# The Trainer tests' small real data (sklearn digits) is shared with these tests.
sys.path.insert(0, str(Path(__file__).parent.parent / "trainer"))
