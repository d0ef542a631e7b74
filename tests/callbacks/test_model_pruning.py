"""ModelPruning as Lightning 2.6's: the same masks and final
weights on the same run, pruned weights in checkpoints."""

from __future__ import annotations

import pytest
import torch
from _twin import fit, lightning, make_module
from torch.nn.utils import prune

import ember
from ember.callbacks import ModelPruning
from ember.checkpoint import load_checkpoint
from ember.errors import ConfigError

CASES = {  # (the callback class, the module) -> the callback
    "global_l1_lottery": lambda cls, m: cls("l1_unstructured", amount=0.3),
    "global_count_no_lottery": lambda cls, m: cls(
        "l1_unstructured", amount=40, use_lottery_ticket_hypothesis=False
    ),
    "local_ln_structured_linear_weights": lambda cls, m: cls(
        "ln_structured",
        parameters_to_prune=[(m.net[0], "weight"), (m.net[3], "weight")],
        use_global_unstructured=False,
        pruning_dim=0,
        pruning_norm=2,
        amount=0.25,
    ),
    "scheduled_on_validation_kept_masks": lambda cls, m: cls(
        "l1_unstructured",
        amount=lambda epoch: 0.2 * (epoch % 2),
        prune_on_train_epoch_end=False,
        make_pruning_permanent=False,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_final_weights_as_lightning(tmp_path, case):
    pl = lightning()
    seen = {}
    for library, cls in (("lightning", pl.callbacks.ModelPruning), ("ember", ModelPruning)):
        module = make_module(library)
        fit(library, tmp_path / library, [CASES[case](cls, module)], module=module)
        seen[library] = module.state_dict()
    theirs, ours = seen["lightning"], seen["ember"]
    assert ours.keys() == theirs.keys()
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value, rtol=0, atol=1e-6, msg=name)
    weights = ours.get("net.0.weight", ours.get("net.0.weight_orig"))
    if "net.0.weight_mask" in ours:
        weights = ours["net.0.weight_mask"]
    assert int((weights == 0).sum()) > 0  # something was pruned


def zeros_of(state):
    return sum(int((v == 0).sum()) for k, v in state.items() if k.endswith(("weight", "bias")))


def test_checkpoint_holds_the_pruned_weights(tmp_path):
    """Each epoch's end prunes half of the remaining weights and biases; the checkpoint written at that
    epoch's end (after the pruning: ModelCheckpoint runs after the other callbacks there, as Lightning's)
    holds them with the masks folded in, no _orig/_mask names. The same zeros as Lightning's files."""
    pl = lightning()
    counts = {}
    for library, pruning, checkpointing in (
        ("lightning", pl.callbacks.ModelPruning, pl.callbacks.ModelCheckpoint),
        ("ember", ModelPruning, ember.ModelCheckpoint),
    ):
        root = tmp_path / library
        checkpoint = checkpointing(dirpath=root / "c", save_top_k=-1)
        module = make_module(library)
        fit(library, root, [pruning("l1_unstructured", amount=0.5), checkpoint], module=module, max_epochs=2)
        saved = [
            torch.load(p, weights_only=False)["state_dict"] for p in sorted((root / "c").glob("epoch=*.ckpt"))
        ]
        assert not any(k.endswith(("_orig", "_mask")) for state in saved for k in state)
        counts[library] = [zeros_of(state) for state in saved] + [zeros_of(module.state_dict())]
    total = sum(v.numel() for k, v in module.state_dict().items() if k.endswith(("weight", "bias")))
    assert counts["ember"] == counts["lightning"]
    first, second, final = counts["ember"]
    assert total // 2 <= first < second == final  # epoch 0's file already pruned; epoch 1's as the model ends
    assert not prune.is_pruned(module)  # training ended with the masks folded in
    assert (
        load_checkpoint(sorted((tmp_path / "ember" / "c").glob("epoch=*.ckpt"))[0])["state_dict"].keys()
        == module.state_dict().keys()
    )


def test_refusals():
    for bad, match in (
        ({"pruning_fn": "l3_unstructured"}, "use one of"),
        ({"pruning_fn": "ln_structured", "use_global_unstructured": False}, "pruning_dim"),
        ({"pruning_fn": "ln_structured", "pruning_dim": 0, "pruning_norm": 1}, "unstructured"),
        ({"pruning_fn": prune.L1Unstructured, "use_global_unstructured": False}, "global"),
        ({"pruning_fn": prune.L1Unstructured(amount=0.1)}, "not an instance"),
        ({"pruning_fn": "l1_unstructured", "parameter_names": ["gamma"]}, "parameter_names"),
        ({"pruning_fn": "l1_unstructured", "amount": "half"}, "amount"),
        ({"pruning_fn": "l1_unstructured", "verbose": 3}, "verbose"),
    ):
        with pytest.raises(ConfigError, match=match):
            ModelPruning(**bad)
    outside = torch.nn.Linear(2, 2)
    with pytest.raises(ConfigError, match="not parameters"):
        ModelPruning.sanitize_parameters_to_prune(make_module("ember"), [(outside, "weight")])
