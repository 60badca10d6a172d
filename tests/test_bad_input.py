"""Bad bytes from outside get a clear error or a logged line, never a traceback or a silent drop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import REPO
from .test_hooks import HOOKS, hook_vault, log_records

__all__ = ["hook_vault"]


def test_a_prompt_with_invalid_utf8_is_still_logged(hook_vault: Path) -> None:
    event = b'{"session_id": "s", "prompt": "how do I fix a flaky test \xff\xfe that fails only on CI"}'
    done = subprocess.run([sys.executable, str(HOOKS / "user_prompt_submit.py")], input=event, capture_output=True)
    assert done.returncode == 0 and done.stderr == b""
    record = log_records("UserPromptSubmit")[-1]
    assert record["prompt"].startswith("how do I fix a flaky test") and "\ufffd" in record["prompt"]
    if done.stdout:
        json.loads(done.stdout)


def test_save_with_a_non_utf8_argument_is_a_clear_error(vault_dir: Path) -> None:
    command = [sys.executable, "-m", "memvault", "--vault", str(vault_dir), "save", "fix", "latin1", b"caf\xe9 au lait"]
    done = subprocess.run(command, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1, done.stderr
    assert b"Traceback" not in done.stderr and b"not valid UTF-8" in done.stderr + done.stdout
    assert not (vault_dir / "MemoryVault/personal-private/fix/latin1.md").exists()
