"""MLFlowLogger against a real MLflow tracking server started on 127.0.0.1 by the fixture below.

The server (`mlflow server`, sqlite backend and proxied artifacts in a temporary folder) starts once
for this module; it is stopped through its process group. What the tests assert is read back with
MLflow's own client from the server: run status, params, metric histories, artifact bytes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytest.importorskip("mlflow", reason="needs the mlflow extra: pip install 'ember[mlflow]'")
pytest.importorskip(
    "flask_cors", reason="the MLflow server's packages come with the dev extra: pip install 'ember[dev]'"
)

from _models import DigitsMLP, digits_loaders  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

import ember  # noqa: E402
from ember.callbacks import ModelCheckpoint  # noqa: E402
from ember.loggers import MLFlowLogger  # noqa: E402

#: Starting the server takes 6-12 s of CPU (two interpreters
#: import MLflow's server); the tests using it are slow.
server_test = pytest.mark.slow
STARTUP_LIMIT_S = 180  # generous: the shared CI machine is often loaded; the measured time is printed


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


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory):
    """`mlflow server` on a free loopback port; yields its URL; stopped (process group) at the end."""
    root = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    command = [
        sys.executable,
        "-m",
        "mlflow",
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        f"sqlite:///{root}/mlflow.db",
        "--artifacts-destination",
        str(root / "artifacts"),
    ]
    # The server's background job runner (7 extra processes) is not needed to track runs.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    log = (root / "server.log").open("wb")
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        while not _healthy(url):
            if proc.poll() is not None:
                pytest.fail(
                    f"mlflow server exited with {proc.returncode}: "
                    f"{(root / 'server.log').read_text()[-2000:]}"
                )
            if time.monotonic() - started > STARTUP_LIMIT_S:
                pytest.fail(f"mlflow server not healthy after {STARTUP_LIMIT_S} s")
            time.sleep(0.2)
        print(f"\nmlflow server healthy after {time.monotonic() - started:.1f} s", file=sys.stderr)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _fit(tmp_path, logger, max_epochs=2, ckpt_path=None, **checkpoint):
    train, val = digits_loaders(batch_size=100)
    trainer = ember.Trainer(
        max_epochs=max_epochs,
        logger=logger,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=tmp_path,
        callbacks=[ModelCheckpoint(**checkpoint)],
    )
    trainer.fit(DigitsMLP(lr=0.2, hidden=24), train, val, ckpt_path=ckpt_path)
    return trainer


@server_test
def test_fit_logs_metrics_with_steps_params_and_tags(mlflow_server, tmp_path, monkeypatch):
    monkeypatch.chdir(
        tmp_path
    )  # with a server, the run's local files (checkpoints) go under the working folder
    logger = MLFlowLogger(
        experiment_name="digits-metrics",
        run_name="mlp",
        tracking_uri=mlflow_server,
        tags={"team": "ember"},
        prefix="fit",
    )
    trainer = _fit(tmp_path, logger)

    client = MlflowClient(mlflow_server)
    run = client.get_run(logger.run_id)
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "mlp" and run.data.tags["team"] == "ember"
    assert client.get_experiment(run.info.experiment_id).name == "digits-metrics"
    assert run.data.params == {"lr": "0.2", "hidden": "24"}
    history = client.get_metric_history(logger.run_id, "fit-val_acc")
    assert [m.step for m in history] == [
        14,
        29,
    ]  # one per epoch, at the step just taken counted from 0 (Lightning)
    assert history[-1].value == pytest.approx(float(trainer.callback_metrics["val_acc"]))
    # Lightning's checkpoint folder for this logger: <save_dir or working folder>/<experiment id>/<run id>
    assert (
        Path(trainer.checkpoint_callback.best_model_path).parent
        == tmp_path / run.info.experiment_id / logger.run_id / "checkpoints"
    )


def _artifact_bytes(client, run_id, path, tmp_path) -> bytes:
    return Path(client.download_artifacts(run_id, path, str(tmp_path / "download"))).read_bytes()


@server_test
@pytest.mark.parametrize("log_model", ["all", True])
def test_checkpoints_are_uploaded_as_artifacts(mlflow_server, tmp_path, log_model):
    """The logger's side of log_model, on a real fit's ModelCheckpoint: given the callback's notification,
    the files reach the server bitwise ("all": at once; True: when the run ends). A logger outside the fit
    receives the notification here, so this holds apart from ModelCheckpoint's own call (tested below)."""
    trainer = _fit(tmp_path, False, max_epochs=1, save_last=True)
    callback = trainer.checkpoint_callback
    logger = MLFlowLogger(experiment_name="digits-ckpt", tracking_uri=mlflow_server, log_model=log_model)
    client = MlflowClient(mlflow_server)

    logger.after_save_checkpoint(callback)
    uploaded = {a.path for a in client.list_artifacts(logger.run_id)}
    if log_model is True:
        assert uploaded == set()  # kept for the end of the run
        logger.finalize("success")
        uploaded = {a.path for a in client.list_artifacts(logger.run_id)}
    best = Path(callback.best_model_path)
    assert uploaded == {best.stem, "last"}
    assert _artifact_bytes(client, logger.run_id, f"{best.stem}/{best.name}", tmp_path) == best.read_bytes()
    assert _artifact_bytes(client, logger.run_id, "last/aliases.txt", tmp_path) == b"['latest']"
    assert b"original_filename: last.ckpt" in _artifact_bytes(
        client, logger.run_id, "last/metadata.yaml", tmp_path
    )


@server_test
def test_fit_with_log_model_all_uploads_checkpoints_by_itself(mlflow_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    logger = MLFlowLogger(experiment_name="digits-ckpt-auto", tracking_uri=mlflow_server, log_model="all")
    _fit(tmp_path, logger, max_epochs=1, save_last=True)
    assert {a.path for a in MlflowClient(mlflow_server).list_artifacts(logger.run_id)}


@server_test
def test_resumed_fit_continues_the_same_run(mlflow_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = MLFlowLogger(experiment_name="digits-resume", run_name="resumed", tracking_uri=mlflow_server)
    trainer = _fit(tmp_path, first, max_epochs=1, save_last=True)
    last = trainer.checkpoint_callback.last_model_path

    # Lightning's way: name the run to continue. ember's checkpoint state carries it too (state_dict).
    second = MLFlowLogger(experiment_name="digits-resume", tracking_uri=mlflow_server)
    second.load_state_dict(first.state_dict())
    _fit(tmp_path, second, max_epochs=2, ckpt_path=last, save_last=True)

    client = MlflowClient(mlflow_server)
    assert second.run_id == first.run_id
    runs = client.search_runs([first.experiment_id])
    assert [r.info.run_id for r in runs] == [first.run_id]
    assert [m.step for m in client.get_metric_history(first.run_id, "val_acc")] == [
        14,
        29,
    ]  # 0-based, as Lightning
    assert client.get_run(first.run_id).info.status == "FINISHED"
    # The resumed fit wrote into the first run's folder.
    assert Path(last).parent == tmp_path / first.experiment_id / first.run_id / "checkpoints"


@server_test
def test_resuming_from_a_checkpoint_continues_its_run_without_a_run_id(mlflow_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    first = MLFlowLogger(experiment_name="digits-auto-resume", tracking_uri=mlflow_server)
    trainer = _fit(tmp_path, first, max_epochs=1, save_last=True)
    second = MLFlowLogger(experiment_name="digits-auto-resume", tracking_uri=mlflow_server)
    _fit(
        tmp_path, second, max_epochs=2, ckpt_path=trainer.checkpoint_callback.last_model_path, save_last=True
    )
    assert second.run_id == first.run_id


@server_test
def test_an_explicit_run_id_wins_over_saved_state(mlflow_server):
    client = MlflowClient(mlflow_server)
    experiment = client.create_experiment("digits-explicit")
    mine = client.create_run(experiment).info.run_id
    logger = MLFlowLogger(tracking_uri=mlflow_server, run_id=mine)
    logger.load_state_dict({"run_id": "some-other-run"})
    assert logger.run_id == mine and logger.experiment_id == experiment


def test_missing_mlflow_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)
    monkeypatch.setitem(sys.modules, "mlflow.tracking", None)
    with pytest.raises(ember.ConfigError, match=r"MLFlowLogger needs mlflow .*pip install 'ember\[mlflow\]'"):
        MLFlowLogger()


def test_an_unreachable_server_is_one_line_within_seconds(tmp_path):
    logger = MLFlowLogger(tracking_uri=f"http://127.0.0.1:{_free_port()}")  # nothing listens there
    started = time.monotonic()
    with pytest.raises(
        ember.errors.ServiceError,
        match=r"cannot reach the MLflow tracking server at http://127\.0\.0"
        r"\.1:\d+ within \d+ s \(.*refused.*\); start it",
    ):
        ember.Trainer(logger=logger, default_root_dir=tmp_path, enable_progress_bar=False).fit(
            DigitsMLP(), *digits_loaders(batch_size=500)
        )
    assert time.monotonic() - started < 10


def test_log_model_other_values_are_refused():
    with pytest.raises(ember.ConfigError, match="must be True, False or 'all'"):
        MLFlowLogger(log_model="best")


def test_only_rank_zero_opens_the_tracking_store(tmp_path, monkeypatch):
    # MLflow's client creates a sqlite store's tables when it is built: ranks that torchrun starts together
    # would all create them at once (MLflow failed with "duplicate column name"). Only rank zero writes to
    # the store, so only rank zero builds the client.
    store = tmp_path / "mlflow.db"
    monkeypatch.setenv("RANK", "1")
    MLFlowLogger(experiment_name="e", tracking_uri=f"sqlite:///{store}")
    assert not store.exists()
    monkeypatch.setenv("RANK", "0")
    MLFlowLogger(experiment_name="e", tracking_uri=f"sqlite:///{store}")
    assert store.exists()
