"""MLFlowLogger and its outside service: a server killed mid-fit, a malformed URI, the default store.

A tracking server that dies mid-fit does not stop the fit and does not block it for minutes (MLflow's own
client retries for about 8 minutes): one warning, the later metrics kept in
`<log_dir>/mlflow_unsent_metrics.csv`. The server is a real `mlflow
server` on 127.0.0.1, killed with SIGKILL from inside the fit.
"""

from __future__ import annotations

import csv
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from pathlib import Path

import pytest

pytest.importorskip("mlflow", reason="needs the mlflow extra: pip install 'ember[mlflow]'")
pytest.importorskip(
    "flask_cors", reason="the MLflow server's packages come with the dev extra: pip install 'ember[dev]'"
)

from _models import DigitsMLP, digits_loaders  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

import ember  # noqa: E402
from ember.loggers import MLFlowLogger  # noqa: E402

STARTUP_LIMIT_S = 180  # generous: the shared machine is often loaded


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture
def doomed_server(tmp_path):
    """`mlflow server` on a free loopback port, in its own process group, for a test that kills it."""
    root = tmp_path / "server"
    root.mkdir()
    url = f"http://127.0.0.1:{_free_port()}"
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        url.rsplit(":", 1)[1],
        "--workers",
        "1",
        "--backend-store-uri",
        f"sqlite:///{root}/mlflow.db",
        "--artifacts-destination",
        str(root / "artifacts"),
    ]
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    with (root / "server.log").open("wb") as log:
        proc = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    started = time.monotonic()
    try:
        while not _healthy(url):
            assert proc.poll() is None, (root / "server.log").read_text()[-2000:]
            assert time.monotonic() - started < STARTUP_LIMIT_S, "mlflow server not healthy"
            time.sleep(0.2)
        yield url, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class KillServerAfterFirstEpoch(ember.Callback):
    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc

    def on_train_epoch_end(self, trainer, module) -> None:
        if trainer.current_epoch == 0:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.mark.slow  # a real MLflow server (6-12 s to start)
@pytest.mark.timeout(300)
def test_a_server_killed_mid_fit_is_said_once_and_the_fit_goes_on(doomed_server, tmp_path, monkeypatch):
    url, proc = doomed_server
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBER_MLFLOW_TIMEOUT_S", "4")
    logger = MLFlowLogger(tracking_uri=url, experiment_name="dies")
    trainer = ember.Trainer(
        max_epochs=3,
        logger=logger,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[KillServerAfterFirstEpoch(proc)],
    )
    train, val = digits_loaders(batch_size=300)
    started = time.monotonic()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer.fit(DigitsMLP(lr=0.2, hidden=16), train, val)
    took = time.monotonic() - started
    said = [str(w.message) for w in caught if "stopped answering" in str(w.message)]
    assert len(said) == 1, said
    assert f"the MLflow tracking server at {url} stopped answering" in said[0]
    assert "EMBER_MLFLOW_TIMEOUT_S" in said[0]
    assert trainer.current_epoch == 3  # the fit went on to its end
    assert took < 120  # MLflow's own retries: about 8 minutes
    unsent = Path(logger.log_dir) / "mlflow_unsent_metrics.csv"
    rows = list(csv.DictReader(unsent.open()))
    steps = sorted({int(r["step"]) for r in rows if r["key"] == "train_loss"})
    assert steps and steps[-1] == trainer.global_step - 1  # every later step's loss is kept
    assert {"val_loss", "epoch"} <= {r["key"] for r in rows}


@pytest.mark.parametrize(
    "uri",
    [
        "http//127.0.0.1:5000",
        "http:/127.0.0.1:5000",
        "http://127.0.0.1:abc",
        "http://:5000",
        "sqlite:/mlflow.db",
        "htp://127.0.0.1:5000",
    ],
)
def test_a_malformed_tracking_uri_is_one_line(uri, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ember.ConfigError) as refused:
        MLFlowLogger(tracking_uri=uri)
    message = str(refused.value)
    assert "\n" not in message and f"MLFlowLogger(tracking_uri={uri!r})" in message
    assert list(tmp_path.iterdir()) == []  # no local folder named after the URL


def test_the_default_store_works_with_this_mlflow_and_stays_in_save_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    logger = MLFlowLogger()
    trainer = ember.Trainer(
        max_epochs=1,
        logger=logger,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[ember.ModelCheckpoint()],
    )
    train, val = digits_loaders(batch_size=500)
    trainer.fit(DigitsMLP(lr=0.2, hidden=16), train, val)
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    run = client.get_run(logger.run_id)
    assert run.info.status == "FINISHED" and "val_loss" in run.data.metrics
    assert Path(logger.save_dir).resolve() == (tmp_path / "mlruns").resolve()
    assert Path(trainer.checkpoint_callback.best_model_path).resolve().is_relative_to(tmp_path / "mlruns")
    assert run.info.artifact_uri.startswith((tmp_path / "mlruns" / "artifacts").as_uri())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlruns"]
