"""MLFlowLogger: metrics, hyperparameters and checkpoints in an MLflow tracking server (Lightning's logger).

Same name, arguments and behaviour as Lightning 2.6's `MLFlowLogger`:

- the experiment is found by name (created, with `artifact_location`, when missing) and a run is
  started on first use, tagged with `tags` and `run_name` (as the `mlflow.runName` tag); pass
  `run_id` to continue an existing run instead, e.g. when resuming a fit;
- metrics are logged with their step, names prefixed by `prefix` and `-`; characters MLflow refuses
  are removed (with a warning);
- hyperparameters are flattened (`optim/lr`) and logged as params (values cut to 250 characters);
- `log_model=True` uploads the checkpoints of `ModelCheckpoint` when the fit ends (every one as it is
  written when `save_top_k=-1`), `log_model="all"` uploads each as it is written, under an artifact
  folder named after the file, with `metadata.yaml` and `aliases.txt` beside it;
- without `tracking_uri` (and without `MLFLOW_TRACKING_URI`), runs go to `sqlite:///<save_dir>/mlflow.db`
  with their artifacts in `<save_dir>/artifacts` (Lightning writes `file:<save_dir>`, the file store that
  MLflow 3 refuses by default; an explicit `file:` URI is still used, and its refusal is one line).

Deadlines (docs/safety.md): every call to a tracking server gets at most `EMBER_MLFLOW_TIMEOUT_S`
seconds (15; MLflow's own default retries for about 8 minutes), unless the user set MLflow's
`MLFLOW_HTTP_REQUEST_*` variables. A server that stops answering mid-fit does not stop the fit: one
warning says so, the metrics from then on are written to `<log_dir>/mlflow_unsent_metrics.csv`, and
nothing more is sent to that server by this logger.

mlflow is imported when a logger is built, never at `import ember` (`pip install 'ember[mlflow]'`).
Only global rank zero talks to the server.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from ember.deadlines import MLFLOW_TIMEOUT, seconds
from ember.errors import ConfigError, ServiceError
from ember.fs import write_text
from ember.loggers.base import Logger
from ember.loggers.tensorboard import flatten_params

log = logging.getLogger(__name__)

LOCAL_FILE_URI_PREFIX = "file:"
#: What MLflow accepts in a metric name (others are removed, as Lightning does).
_METRIC_NAME_FORBIDDEN = re.compile(r"[^a-zA-Z0-9_/. -]+")
_STATUS = {"success": "FINISHED", "finished": "FINISHED", "failed": "FAILED", "interrupted": "KILLED"}


def _rank() -> int:
    return int(os.environ.get("RANK", 0))


def _import_client() -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        raise ConfigError(f"MLFlowLogger needs mlflow ({exc}); pip install 'ember[mlflow]'") from None
    return MlflowClient


class MLFlowLogger(Logger):
    """Log to MLflow: metrics with their step, hyperparameters as params, checkpoints as artifacts.

    Example:
        >>> import tempfile
        >>> from ember.loggers import MLFlowLogger
        >>> uri = f"sqlite:///{tempfile.mkdtemp()}/mlflow.db"  # or a server: "http://127.0.0.1:5000"
        >>> logger = MLFlowLogger(experiment_name="digits", run_name="mlp", tracking_uri=uri)
        >>> logger.log_metrics({"loss": 0.5}, step=1)
        >>> logger.finalize("success")
        >>> logger.experiment.get_run(logger.run_id).data.metrics
        {'loss': 0.5}
    """

    LOGGER_JOIN_CHAR = "-"

    def __init__(
        self,
        experiment_name: str = "lightning_logs",
        run_name: str | None = None,
        tracking_uri: str | None = None,
        tags: dict[str, Any] | None = None,
        save_dir: str | None = "./mlruns",
        log_model: Literal[True, False, "all"] = False,
        prefix: str = "",
        artifact_location: str | None = None,
        run_id: str | None = None,
        synchronous: bool | None = None,
    ) -> None:
        if log_model not in (True, False, "all"):
            raise ConfigError(f"MLFlowLogger(log_model={log_model!r}) must be True, False or 'all'")
        client_class = _import_client()
        tracking_uri = _checked_uri(
            tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or _default_uri(save_dir)
        )
        if artifact_location is None and tracking_uri == _default_uri(save_dir):
            artifact_location = (Path(save_dir or ".") / "artifacts").resolve().as_uri()  # beside mlflow.db
        super().__init__(save_dir or ".", name=None)
        self._experiment_name = experiment_name
        self._experiment_id: str | None = None
        self._tracking_uri = tracking_uri
        self._run_name = run_name
        self._run_id = run_id
        self.tags = tags
        self._log_model = log_model
        self._logged_model_time: dict[str, float] = {}
        self._checkpoint_callback: Any = None
        self._prefix = prefix
        self._artifact_location = artifact_location
        self._log_batch_kwargs = {} if synchronous is None else {"synchronous": synchronous}
        self._initialized = False
        self._unsent: list[tuple[int, str, float, int]] | None = None  # set when the server stopped answering
        # MLflow's client creates a sqlite store's tables when it is built. Only rank zero ever writes to the
        # store, so only rank zero builds one: ranks that torchrun starts together would all create the
        # tables at once ("duplicate column name"). Lightning builds it on every rank.
        self._mlflow_client: Any = None
        if _rank() != 0:
            return
        try:
            self._mlflow_client = client_class(tracking_uri)
        except Exception as exc:  # MLflow's refusals of a URI come as many classes; all are one line here
            raise ConfigError(
                f"MLFlowLogger(tracking_uri={tracking_uri!r}): MLflow refuses it "
                f"({_first_line(exc)}); pass a server URL (http://host:5000) or "
                f"sqlite:///path/mlflow.db"
            ) from None

    # ---- the run -----------------------------------------------------------------------------
    @property
    def experiment(self) -> Any:
        """The `MlflowClient`; the experiment and run exist once this returns (rank zero only)."""
        if self._initialized:
            return self._mlflow_client
        if _rank() != 0:
            raise ConfigError("MLFlowLogger.experiment is used on global rank zero only")
        import mlflow

        _check_reachable(self._tracking_uri, seconds(MLFLOW_TIMEOUT))
        mlflow.set_tracking_uri(self._tracking_uri)
        with _deadline():
            return self._start_run()

    def _start_run(self) -> Any:
        client = self._mlflow_client
        if self._run_id is not None:
            self._experiment_id = client.get_run(self._run_id).info.experiment_id
            self._initialized = True
            return client
        if self._experiment_id is None:
            found = client.get_experiment_by_name(self._experiment_name)
            if found is not None and found.lifecycle_stage != "deleted":
                self._experiment_id = found.experiment_id
            else:
                log.warning("Experiment with name %s not found. Creating it.", self._experiment_name)
                self._experiment_id = client.create_experiment(
                    name=self._experiment_name, artifact_location=self._artifact_location
                )
        self._run_id = client.create_run(experiment_id=self._experiment_id, tags=self._run_tags()).info.run_id
        self._initialized = True
        return client

    def _run_tags(self) -> dict[str, Any]:
        from mlflow.tracking.context.registry import resolve_tags
        from mlflow.utils.mlflow_tags import MLFLOW_RUN_NAME

        if self._run_name is not None:
            self.tags = dict(self.tags or {})
            if MLFLOW_RUN_NAME in self.tags:
                log.warning(
                    "The tag %s is found in tags. The value will be overridden by %s.",
                    MLFLOW_RUN_NAME,
                    self._run_name,
                )
            self.tags[MLFLOW_RUN_NAME] = self._run_name
        return resolve_tags(self.tags)

    @property
    def run_id(self) -> str | None:
        """The run's id (the run is created on first access)."""
        _ = self.experiment
        return self._run_id

    @property
    def experiment_id(self) -> str | None:
        _ = self.experiment
        return self._experiment_id

    @property
    def name(self) -> str:
        """The experiment id, as in Lightning."""
        return str(self.experiment_id)

    @property
    def version(self) -> str:
        """The run id, as in Lightning."""
        return str(self.run_id)

    @property
    def save_dir(self) -> str | None:
        """The local folder of a `file:` tracking URI; None for a server."""
        if self._tracking_uri.startswith(LOCAL_FILE_URI_PREFIX):
            return self._tracking_uri[len(LOCAL_FILE_URI_PREFIX) :]
        if self._tracking_uri.startswith(SQLITE_URI_PREFIX) and self._tracking_uri.endswith("/mlflow.db"):
            return self._tracking_uri[len(SQLITE_URI_PREFIX) : -len("/mlflow.db")]
        return None

    @property
    def log_dir(self) -> str:
        """Where the Trainer puts this run's local files (checkpoints): `<save_dir>/<experiment id>/<run id>`,
        Lightning's checkpoint folder for this logger. With a tracking server: under the working directory."""
        root = self.save_dir or os.getcwd()
        if _rank() != 0:
            return root  # other ranks never create a run; rank zero alone writes files
        return str(Path(root) / self.name / self.version)

    # ---- what is logged ----------------------------------------------------------------------
    def log_hyperparams(self, params: Mapping[str, Any]) -> None:
        if _rank() != 0:
            return
        from mlflow.entities import Param

        from ember.checkpoint import to_safe

        flat = flatten_params(to_safe(dict(params)))
        # MLflow limits a param's value length and a batch to 100 params (Lightning's limits).
        items = [Param(key=k, value=str(v)[:250]) for k, v in flat.items()]
        for start in range(0, len(items), 100):
            self._send(
                "log_batch", run_id=self.run_id, params=items[start : start + 100], **self._log_batch_kwargs
            )

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        if _rank() != 0:
            return
        from mlflow.entities import Metric

        timestamp_ms = int(time.time() * 1000)
        batch = []
        for name, value in metrics.items():
            if isinstance(value, str):
                log.warning("Discarding metric with string value %s=%s.", name, value)
                continue
            key = f"{self._prefix}{self.LOGGER_JOIN_CHAR}{name}" if self._prefix else name
            clean = _METRIC_NAME_FORBIDDEN.sub("", key)
            if clean != key:
                warnings.warn(
                    f"MLFlow only allows '_', '/', '.' and ' ' special characters in metric name. "
                    f"Replacing {key} with {clean}.",
                    RuntimeWarning,
                    stacklevel=2,
                )
            batch.append(Metric(key=clean, value=float(value), timestamp=timestamp_ms, step=step or 0))
        if not self._send("log_batch", run_id=self.run_id, metrics=batch, **self._log_batch_kwargs):
            self._keep(batch)

    def _send(self, method: str, *args: Any, **kwargs: Any) -> bool:
        """Call the client within the deadline; False (said once) when the server stopped answering."""
        if self._unsent is not None:
            return False
        client = self.experiment
        try:
            with _deadline():
                getattr(client, method)(*args, **kwargs)
            return True
        except Exception as exc:
            if _answers(self._tracking_uri):
                raise  # the server is there and refused the call: a real error, not a lost server
            self._unsent = []
            warnings.warn(
                f"MLFlowLogger: the MLflow tracking server at {self._tracking_uri} stopped answering "
                f"({_first_line(exc)}); the fit goes on, this run's later metrics go to "
                f"{self._unsent_file()} and nothing more is sent "
                f"to the server (the deadline: {MLFLOW_TIMEOUT})",
                RuntimeWarning,
                stacklevel=3,
            )
            return False

    def _keep(self, batch: list[Any]) -> None:
        assert self._unsent is not None
        self._unsent += [(m.step, m.key, m.value, m.timestamp) for m in batch]
        from ember.fs import atomic_write

        with atomic_write(self._unsent_file(), "w", newline="") as f:
            f.write("step,key,value,timestamp\n")
            f.writelines(f"{step},{key},{value!r},{stamp}\n" for step, key, value, stamp in self._unsent)

    def _unsent_file(self) -> Path:
        return Path(self.log_dir) / "mlflow_unsent_metrics.csv"

    def finalize(self, status: str = "success") -> None:
        """End the run (FINISHED, FAILED, or KILLED when interrupted), uploading pending checkpoints first."""
        if not self._initialized or _rank() != 0 or self._unsent is not None:
            return  # a server that stopped answering was said once; the fit ends without it
        if self._checkpoint_callback is not None:
            self._scan_and_log_checkpoints(self._checkpoint_callback)
        if self._unsent is None:
            self._send("set_terminated", self.run_id, _STATUS.get(status, status))

    # ---- checkpoints as artifacts ------------------------------------------------------------
    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        """Called after `ModelCheckpoint` wrote a file: upload
        now (`"all"`, or `save_top_k=-1`) or at the end."""
        if self._log_model == "all" or (self._log_model is True and checkpoint_callback.save_top_k == -1):
            self._scan_and_log_checkpoints(checkpoint_callback)
        elif self._log_model is True:
            self._checkpoint_callback = checkpoint_callback

    def _scan_and_log_checkpoints(self, checkpoint_callback: Any) -> None:
        import yaml

        for mtime, path, score in _new_checkpoints(checkpoint_callback, self._logged_model_time):
            if self._unsent is not None:
                return
            metadata = {
                "score": score,
                "original_filename": Path(path).name,
                "Checkpoint": {
                    k: getattr(checkpoint_callback, k)
                    for k in (
                        "monitor",
                        "mode",
                        "save_last",
                        "save_top_k",
                        "save_weights_only",
                        "every_n_train_steps",
                        "every_n_epochs",
                    )
                    if hasattr(checkpoint_callback, k)
                },
            }
            aliases = ["latest", "best"] if path == checkpoint_callback.best_model_path else ["latest"]
            artifact_path = Path(path).stem
            if not self._send("log_artifact", self.run_id, path, artifact_path):
                return
            with tempfile.TemporaryDirectory() as tmp:
                write_text(Path(tmp, "metadata.yaml"), yaml.safe_dump(metadata, default_flow_style=False))
                write_text(Path(tmp, "aliases.txt"), str(aliases))
                self._send("log_artifacts", self.run_id, tmp, artifact_path)
            self._logged_model_time[path] = mtime

    # ---- resume ------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The run to continue when a fit resumes from a checkpoint holding this."""
        return {"run_id": self._run_id, "experiment_id": self._experiment_id}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Continue the saved run, unless this logger was given its own `run_id` or already started one."""
        if self._run_id is None and not self._initialized and state_dict.get("run_id"):
            self._run_id = state_dict["run_id"]


SQLITE_URI_PREFIX = "sqlite:///"
#: MLflow's variables that ember sets for one call when the user has not (MLflow: 7 retries, 120 s each).
_HTTP_SETTINGS = (
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR",
    "MLFLOW_HTTP_REQUEST_TIMEOUT",
)


def _default_uri(save_dir: str | None) -> str:
    """`sqlite:///<save_dir>/mlflow.db`: a store MLflow 3 accepts (its file store refuses by default)."""
    return f"{SQLITE_URI_PREFIX}{Path(save_dir or '.').resolve() / 'mlflow.db'}"


#: `http:/host` (one slash), `http//host` (no colon), `sqlite:/x`: a URL typed wrong, never a local path.
_MALFORMED_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*(:/(?!/)|//)")


def _checked_uri(uri: str) -> str:
    """`uri`, or a one-line ConfigError when it is a malformed URL (a bad port, no host, a missing slash)."""
    from urllib.parse import urlsplit

    if _MALFORMED_URL.match(uri):
        raise ConfigError(
            f"MLFlowLogger(tracking_uri={uri!r}) is not a URL: write http://host:port, "
            "sqlite:///path/mlflow.db or file:/abs/folder"
        )
    parts = urlsplit(uri)
    if parts.scheme in ("http", "https"):
        try:
            port = parts.port
        except ValueError:
            port = -1
        if not parts.hostname or port == -1:
            raise ConfigError(
                f"MLFlowLogger(tracking_uri={uri!r}) is not a URL: write {parts.scheme}://host:port"
            )
    return uri


@contextlib.contextmanager
def _deadline() -> Iterator[None]:
    """MLflow's HTTP settings giving one call at most EMBER_MLFLOW_TIMEOUT_S (the user's own settings win)."""
    budget = seconds(MLFLOW_TIMEOUT)
    chosen = {
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
        "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
        "MLFLOW_HTTP_REQUEST_TIMEOUT": str(max(1, int(budget / 2))),
    }
    added = [k for k in _HTTP_SETTINGS if k not in os.environ]
    os.environ.update({k: chosen[k] for k in added})
    try:
        yield
    finally:
        for key in added:
            os.environ.pop(key, None)


def _answers(uri: str) -> bool:
    """Does the tracking server at `uri` answer at all (a local store always does)?"""
    try:
        _check_reachable(uri, min(5.0, seconds(MLFLOW_TIMEOUT)))
    except ServiceError:
        return False
    return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:300]


def _check_reachable(uri: str, timeout_s: float = 5.0) -> None:
    """Fail in seconds, with one line, when an http(s) tracking server does not answer at all (MLflow's own
    client retries for minutes). Any HTTP answer, even 401 or 404, means the server is there."""
    import urllib.error
    import urllib.request

    if not uri.startswith(("http://", "https://")):
        return
    try:
        urllib.request.urlopen(f"{uri.rstrip('/')}/health", timeout=timeout_s).close()
    except urllib.error.HTTPError:
        return
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        raise ServiceError(
            f"MLFlowLogger cannot reach the MLflow tracking server at {uri} within {timeout_s:g} s "
            f"({reason}); start it (mlflow server --host 127.0.0.1 --port 5000) or fix tracking_uri / "
            f"MLFLOW_TRACKING_URI (the deadline: {MLFLOW_TIMEOUT})"
        ) from None


def _new_checkpoints(
    checkpoint_callback: Any, logged: dict[str, float]
) -> list[tuple[float, str, float | None]]:
    """Files of the callback (last, best, best k) that were
    not uploaded yet or changed since, oldest first."""
    found: dict[str, float | None] = {}
    last = getattr(checkpoint_callback, "last_model_path", "")
    if last:
        found[last] = getattr(checkpoint_callback, "current_score", None)
    best = getattr(checkpoint_callback, "best_model_path", "")
    if best:
        found[best] = checkpoint_callback.best_model_score
    found.update(getattr(checkpoint_callback, "best_k_models", {}))
    files = sorted((Path(p).stat().st_mtime, p, s) for p, s in found.items() if Path(p).is_file())
    return [(t, p, None if s is None else float(s)) for t, p, s in files if p not in logged or logged[p] < t]
