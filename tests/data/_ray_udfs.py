"""Functions and classes the Ray backend tests send to Ray workers (importable there by name)."""

from __future__ import annotations

import os

import numpy as np


def double(row):
    return {**row, "v": row["v"] * 2, "parity": row["id"] % 2}


def keep_odd(row):
    return row["id"] % 2 == 1


def add_square(batch):
    return {**batch, "sq": batch["id"] * batch["id"]}


def twice(row):
    return [row, row]


def group_total(batch):
    return {"k": batch["k"][:1], "total": np.array([batch["v"].sum()]), "n": np.array([len(batch["v"])])}


class Scale:
    """A callable class: each Ray actor builds it once and reports where it ran (in its rows, and as
    a marker file ``node-<id>`` in ``marker_dir`` when one is given)."""

    def __init__(self, factor: float, marker_dir: str | None = None) -> None:
        import ray

        self.factor = factor
        self.node = ray.get_runtime_context().get_node_id()
        if marker_dir is not None:
            open(os.path.join(marker_dir, f"node-{self.node}"), "w").close()

    def __call__(self, batch):
        n = len(batch["id"])
        return {
            **batch,
            "x": batch["x"] * self.factor,
            "node": np.array([self.node] * n),
            "pid": np.full(n, os.getpid()),
        }


class SlowScale(Scale):
    """Scale, slowly: the node-loss test kills a node while these run."""

    def __call__(self, batch):
        import time

        time.sleep(0.2)
        return super().__call__(batch)
