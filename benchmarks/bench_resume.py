"""Benchmark 6: resuming. What does `fit(ckpt_path="last")` cost, and is the result exact?

The classic Net trains on 15 shuffled batches of 64 per epoch with dropout, so the data order and
the random state both matter. A first run stops at step K, mid-epoch, leaving `last.ckpt`. A
fresh process would then run the same script again: seed, build the model, and fit with
`ckpt_path="last"` up to step 2K, in the next epoch. Timed: from the call to `fit` to the return
of the first optimizer step. Checked: whether the resumed fit took exactly the K remaining steps
and ended with weights bitwise equal to those of one uninterrupted run to step 2K, every round.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
from harness import Bench, alternate, main, new_bench, quiet, version
from torch.optim.optimizer import register_optimizer_step_post_hook
from torch.utils.data import DataLoader
from workloads import Clock, Framework, Net, as_framework_module, fashion_tensors, framework

BATCHES_PER_EPOCH = 15


def run(quick: bool) -> Bench:
    k, rounds = (10, 3) if quick else (10, 7)
    data = fashion_tensors(limit=64 * BATCHES_PER_EPOCH)
    bench = new_bench(
        "resume", f'Resume: fit(ckpt_path="last") to next optimizer step (step {k} of {2 * k})', "ms"
    )
    runners: dict[str, Callable[[], float] | None] = {}
    work = Path(tempfile.mkdtemp(prefix="ember-bench-resume-"))

    def fit(tool: Framework, root: Path, max_steps: int, ckpt_path: str | None = None) -> torch.nn.Module:
        tool.seed_everything(0)  # the script starts the same way whether it resumes or not
        model = as_framework_module(tool.Module, Net, Clock(), log=False)
        checkpoints = tool.ModelCheckpoint(
            dirpath=root / "checkpoints", every_n_train_steps=k, save_last=True
        )
        trainer = tool.Trainer(
            max_steps=max_steps, accelerator="cpu", devices=1, default_root_dir=root, callbacks=[checkpoints],
            logger=False, enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        )  # fmt: skip
        with quiet():
            trainer.fit(
                model, train_dataloaders=DataLoader(data, batch_size=64, shuffle=True), ckpt_path=ckpt_path
            )
        return model

    def resume_with(tool: Framework) -> Callable[[], float]:
        uninterrupted: dict[str, torch.Tensor] = {}
        identical: list[bool] = []

        def resume() -> float:
            if not uninterrupted:  # first (warm-up) call: the reference run and the stopped run
                uninterrupted.update(fit(tool, work / tool.name / "uninterrupted", 2 * k).state_dict())
                fit(tool, work / tool.name / "stopped", k)
            root = work / tool.name / "resumed"
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(work / tool.name / "stopped", root)
            steps: list[float] = []  # the time of every optimizer step of the resumed fit
            hook = register_optimizer_step_post_hook(lambda *_: steps.append(time.perf_counter()))
            try:
                start = time.perf_counter()
                model = fit(tool, root, 2 * k, ckpt_path="last")
            finally:
                hook.remove()
            final = model.state_dict()
            same = final.keys() == uninterrupted.keys() and all(
                torch.equal(final[n], uninterrupted[n]) for n in final
            )
            identical.append(same and len(steps) == k)  # from scratch with the same seed would be equal too
            note = (
                "yes"
                if all(identical)
                else "no"
                if len(steps) == k
                else f"no (ran {len(steps)} steps, not {k})"
            )
            bench.get(tool.name).note = f"bitwise identical: {note}"
            return (steps[0] - start) * 1e3

        return resume

    for name in ("ember", "Lightning"):
        bench.case(name, version(name.lower(), name))
        tool = framework(name)
        runners[name] = resume_with(tool) if tool else None
    bench.compare("ember", "Lightning")
    try:
        alternate(bench, runners, rounds=rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return bench


if __name__ == "__main__":
    main(run)
