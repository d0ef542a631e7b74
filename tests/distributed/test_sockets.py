"""Local runs never listen beyond loopback: the rendezvous store of a DDP run and of a TorchTrainer run
binds 127.0.0.1 (torch's env:// store listens on every interface). Checked in the real rank-0 process."""

from __future__ import annotations

import json

import pytest
from _dist import assert_no_orphans, assert_ok, run_script


@pytest.mark.parametrize("mode", ["ddp", "torchtrainer"])
def test_a_local_run_listens_on_loopback_only(mode, tmp_path):
    result = run_script("listen_check.py", tmp_path, mode)
    assert_ok(result)
    seen = json.loads((tmp_path / "listening.json").read_text())
    store = [address for address in seen["listening"] if address.endswith(f":{seen['port']}")]
    assert store == [f"127.0.0.1:{seen['port']}"], seen  # the store is there, on loopback
    assert all(a.startswith(("127.", "::1:")) for a in seen["listening"]), seen  # and nothing else is wider
    assert_no_orphans(result)


def test_the_store_binds_the_address_given_and_says_when_it_cannot(monkeypatch):
    from ember.errors import ConfigError
    from ember.runtime import process_group

    for given, bound in (
        ("127.0.0.1", "127.0.0.1"),
        ("localhost", "127.0.0.1"),
        ("10.1.2.3", "10.1.2.3"),
        ("::1", "::1"),
        ("node-0.cluster", None),
    ):
        monkeypatch.setenv("MASTER_ADDR", given)
        assert process_group._store_bind_address() == bound
    monkeypatch.setenv("TORCHELASTIC_USE_AGENT_STORE", "True")  # torchrun: its agent serves the store
    assert process_group._store_bind_address() is None
    with pytest.raises(ConfigError, match="rank 0 cannot listen on MASTER_ADDR=192.0.2.1"):
        process_group._listening_socket("192.0.2.1", 29500)  # TEST-NET: not an address of this machine
