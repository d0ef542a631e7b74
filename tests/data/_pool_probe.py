"""A callable class that leaves one file per construction (named by the worker's pid) in a folder."""

from __future__ import annotations

import os


class Probe:
    def __init__(self, folder: str) -> None:
        open(os.path.join(folder, str(os.getpid())), "w").close()

    def __call__(self, batch):
        return {"id": batch["id"] * 2}
