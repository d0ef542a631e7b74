import sys
from pathlib import Path

import pytest

# Test helpers (models, data) live beside the tests; subprocess scripts import them too.
HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))


@pytest.fixture
def quiet_trainer_kwargs(tmp_path):
    """Trainer options for fast, quiet tests that still write into a private folder."""
    return {"default_root_dir": tmp_path, "enable_progress_bar": False, "enable_model_summary": False}
