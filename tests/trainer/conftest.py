import os
import subprocess
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


@pytest.fixture(scope="session")
def uninterrupted(tmp_path_factory) -> dict:
    """_fit_script.py run to its end once, never interrupted: what every killed-and-resumed run of
    test_resume.py and test_trust_signals.py must end equal to (one run shared: it takes seconds)."""
    import torch

    root = tmp_path_factory.mktemp("uninterrupted")
    done = subprocess.run(
        [sys.executable, str(HERE / "_fit_script.py"), str(root), str(root / "out.pt")],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1"},
    )
    assert done.returncode == 0, done.stderr
    return torch.load(root / "out.pt")
