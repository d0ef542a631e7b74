import sys
from pathlib import Path

# The Trainer tests' small real models (sklearn digits) are shared with these tests.
sys.path.insert(0, str(Path(__file__).parent.parent / "trainer"))
