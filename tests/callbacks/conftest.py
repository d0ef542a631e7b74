import sys
from pathlib import Path

# The small real models and data of the Trainer tests (tests/trainer/_models.py) serve these tests too.
sys.path.insert(0, str(Path(__file__).parent.parent / "trainer"))
# ...and the twin runs of ember and the real Lightning (tests/callbacks/_twin.py).
sys.path.insert(0, str(Path(__file__).parent))
