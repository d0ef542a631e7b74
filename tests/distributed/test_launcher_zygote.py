"""ember's DDP launcher starts each rank as a fork of one zygote (ember/processes/zygote.py) that imported
torch once: each rank must still see what `python [-u] train.py ARGS` gives a fresh interpreter.

Real runs of a script with `Trainer(devices=2)` (the launcher re-runs it as 2 ranks); each rank writes
what it sees into a JSON file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from _dist import REPO, Run, assert_no_orphans, assert_ok, worker_env

SCRIPT = """
import json, os, sys
from pathlib import Path
import torch, ember

out = Path(sys.argv[1])
if "RANK" not in os.environ:
    (out / "driver.json").write_text(json.dumps({"pid": os.getpid()}))

class Model(ember.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)
    def training_step(self, batch, batch_idx):
        return self.layer(batch[0]).pow(2).mean()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

data = torch.utils.data.TensorDataset(torch.randn(8, 2))
ember.Trainer(devices=2, accelerator="cpu", max_epochs=1, logger=False, enable_checkpointing=False,
              enable_progress_bar=False, enable_model_summary=False).fit(
    Model(), torch.utils.data.DataLoader(data, batch_size=2))
seen = {
    "argv": sys.argv, "name": __name__, "path0": sys.path[0], "ppid": os.getppid(),
    "threads": torch.get_num_threads(), "omp": os.environ.get("OMP_NUM_THREADS"),
    "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
}
(out / f"rank{os.environ['RANK']}.json").write_text(json.dumps(seen))
"""


def _run(tmp_path: Path, *options: str, buffered: bool = False) -> tuple[Run, dict, list[dict]]:
    script = tmp_path / "code" / "train.py"
    script.parent.mkdir()
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    env = worker_env()
    if buffered:  # the tests' default is PYTHONUNBUFFERED=1: here only `-u` may make the ranks unbuffered
        del env["PYTHONUNBUFFERED"]
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, *options, str(script), str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
    )
    result = Run(out, done.returncode, done.stdout, done.stderr, time.monotonic() - start)
    assert_ok(result)
    driver = json.loads((out / "driver.json").read_text())
    ranks = [json.loads((out / f"rank{r}.json").read_text()) for r in range(2)]
    return result, driver, ranks


def test_ranks_are_forks_of_one_zygote_that_see_the_scripts_own_start(tmp_path):
    result, driver, ranks = _run(tmp_path)
    script = str(tmp_path / "code" / "train.py")
    for seen in ranks:
        assert seen["argv"] == [script, str(tmp_path / "out")]
        assert seen["name"] == "__main__"
        assert seen["path0"] == str(tmp_path / "code")  # the script's folder, as `python train.py` sets it
        # the launcher's thread share, though the zygote imported torch before the rank existed
        assert seen["threads"] == int(seen["omp"])
    assert ranks[0]["ppid"] == ranks[1]["ppid"] != driver["pid"]  # both forked by one zygote
    assert_no_orphans(result)


def test_minus_u_reaches_the_forked_ranks(tmp_path):
    _, _, ranks = _run(tmp_path, "-u", buffered=True)
    assert [seen["unbuffered"] for seen in ranks] == ["1", "1"]


def test_other_interpreter_options_start_fresh_interpreters(tmp_path):
    _, driver, ranks = _run(tmp_path, "-X", "dev")
    assert [seen["ppid"] for seen in ranks] == [driver["pid"], driver["pid"]]
