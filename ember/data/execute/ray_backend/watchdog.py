"""No hang after a lost node: the driver watches the cluster while it waits for Ray's next block.

Ray retries tasks and restarts actors of a lost node, but an execution can also wait forever (an
actor pool whose restarted actor never gets placed, shuffle outputs that lived only on the lost
node). ``watched(blocks, ray)`` pulls Ray's blocks on a helper thread; while none arrives it checks
every few seconds whether a node that was alive at the start has died. Once one has, and no block
arrived for ``EMBER_RAY_NODE_LOSS_GRACE_S`` seconds (default 60) after that, it raises one
``DataError`` naming the node, instead of waiting on; when Ray itself gives up after the loss (an
actor or object that lived on the node), its error becomes one such DataError too. Without a lost
node it waits as long as Ray takes (a slow pipeline is not a hang).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from ember.errors import DataError

_POLL_S = 2.0
_DONE = object()


def grace_seconds() -> float:
    return float(os.environ.get("EMBER_RAY_NODE_LOSS_GRACE_S", "60"))


def watched(blocks: Iterable[Any], ray: Any, abandon: Any = None) -> Iterator[Any]:
    """``blocks``, unchanged, or one DataError when a node died and Ray made no progress for the grace
    period; ``abandon()`` then stops Ray's execution (the helper thread is blocked inside it)."""
    alive = alive_nodes(ray)
    handoff: queue.Queue = queue.Queue(maxsize=2)
    stop = threading.Event()
    thread = threading.Thread(
        target=_pull, args=(blocks, handoff, stop), name="ember-ray-stream", daemon=True
    )
    thread.start()
    last_progress, lost_at, lost_names = time.monotonic(), None, []
    try:
        while True:
            try:
                item = handoff.get(timeout=_POLL_S)
            except queue.Empty:
                if lost_at is None:
                    lost = [n for n in alive if n not in alive_nodes(ray)]
                    lost_at = time.monotonic() if lost else None
                    lost_names = lost
                if lost_at is not None and time.monotonic() - max(lost_at, last_progress) > grace_seconds():
                    if abandon is not None:
                        abandon()
                    raise DataError(
                        f"Ray lost node {lost_names[0][:12]}... ({alive[lost_names[0]]}) during the pipeline "
                        f"and made no progress for {grace_seconds():.0f} s after; rerun it on the remaining "
                        "nodes (an iterator's state_dict resumes where it stopped) or set "
                        "EMBER_RAY_NODE_LOSS_GRACE_S higher"
                    ) from None
                continue
            if item is _DONE:
                return
            if isinstance(item, BaseException):
                lost_error = after_node_loss(item, alive, ray)
                if lost_error is not None:
                    raise lost_error
                from ember.deadlines import ember_refusal

                refusal = ember_refusal(item)
                if refusal is not None:  # ember's one line, not Ray's 27-line wrapper around it
                    raise refusal.with_traceback(None) from None
                raise item
            last_progress = time.monotonic()
            yield item
    finally:
        stop.set()


def after_node_loss(error: BaseException, alive: dict[str, str], ray: Any) -> DataError | None:
    """One DataError naming the lost node when Ray gave up on the pipeline after a node died (its own
    error -- an actor or object lost with the node -- would otherwise reach the user raw); None when no
    node was lost or the error is not Ray's (a user function's own exception is raised unchanged)."""
    lost = [n for n in alive if n not in alive_nodes(ray)]
    if not lost or not type(error).__module__.startswith("ray."):
        return None
    first_line = (str(error).strip().splitlines() or [""])[0][:200]
    message = (
        f"Ray lost node {lost[0][:12]}... ({alive[lost[0]]}) during the pipeline and then failed it "
        f"({type(error).__name__}: {first_line}); rerun it on the remaining nodes (an iterator's "
        "state_dict resumes where it stopped)"
    )
    exc = DataError(message)
    exc.__cause__ = error
    return exc


def _pull(blocks: Iterable[Any], handoff: queue.Queue, stop: threading.Event) -> None:
    try:
        for block in blocks:
            while not stop.is_set():
                try:
                    handoff.put(block, timeout=_POLL_S)
                    break
                except queue.Full:
                    continue
            if stop.is_set():
                break
        else:
            handoff.put(_DONE)
    except BaseException as e:  # handed to the consumer, raised there
        handoff.put(e)
    finally:
        close = getattr(blocks, "close", None)
        if close is not None and stop.is_set():
            with contextlib.suppress(Exception):  # already failing or finished; nothing more to release
                close()


def alive_nodes(ray: Any) -> dict[str, str]:
    return {n["NodeID"]: n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]}
