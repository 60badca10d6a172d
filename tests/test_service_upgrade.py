"""A warm service started by an older memvault is replaced at the next session start, not used until it idles out."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault import config as config_mod
from memvault.index import embed
from memvault.recall import client
from memvault.vault import indexing

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not embed.available(), reason="the packaged embedding model is not installed"),
]


def test_a_service_speaking_another_protocol_is_replaced(memvault_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After an upgrade the running service would refuse the new recall options (the hook then ran keyword-only
    until it idled out); the session start's `ensure_service` stops it and starts one of the installed code."""
    monkeypatch.delenv("MEMVAULT_SERVICE_TRANSPORT", raising=False)
    config = config_mod.Config()
    first = indexing.ensure_service(config, wait=90)
    try:
        assert first is not None, client.log_file().read_text()
        assert first["protocol"] == client.PROTOCOL
        assert indexing.ensure_service(config)["pid"] == first["pid"]  # the same memvault: kept
        monkeypatch.setattr(client, "PROTOCOL", client.PROTOCOL + 1)  # this process: a memvault upgraded since
        second = indexing.ensure_service(config, wait=90)
        assert second is not None, client.log_file().read_text()
        assert second["pid"] != first["pid"]
        answering = client.status(timeout=2)
        assert answering is not None and answering["pid"] == second["pid"]  # the old one is gone
    finally:
        client.stop()
