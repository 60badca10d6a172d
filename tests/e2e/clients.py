"""Codex CLI and Gemini CLI from npm (`npm.py`), run offline: their config, environment and throwaway homes.

`codex()` / `gemini()` give the pinned client's executable, or skip the test with one line saying why
(no Node, no npm, the registry unreachable). Each client gets a throwaway home wired to a local stub
of its model API (`stubs/`): telemetry, update checks and usage statistics off, so it talks to
127.0.0.1 only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from . import npm

GEMINI_MODEL = "gemini-2.5-flash"  # pinned: the default (auto) model first asks a routing classifier


def codex() -> Path:
    return npm.require(npm.CODEX)


def gemini() -> Path:
    return npm.require(npm.GEMINI_CLI)


# ---- throwaway homes -----------------------------------------------------------------------------


def codex_config(base_url: str) -> str:
    """config.toml for an offline Codex: the stub as a Responses-API provider, nothing else reached."""
    return f"""model = "stub-model"
model_provider = "stub"
check_for_update_on_startup = false

[model_providers.stub]
name = "stub"
base_url = "{base_url}"
wire_api = "responses"
env_key = "STUB_API_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
"""


def gemini_settings() -> dict[str, Any]:
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "model": {"name": GEMINI_MODEL},
    }


def environment(home: Path, memvault_home: Path, **extra: str) -> dict[str, str]:
    """The client's environment: a throwaway HOME, the test's memvault state, this Python's memvault first."""
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "TERM", "SYSTEMROOT", "TMPDIR")}
    return {
        **keep,
        "HOME": str(home),
        "USERPROFILE": str(home),
        "MEMVAULT_HOME": str(memvault_home),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), keep.get("PATH", "")]),
        "NO_COLOR": "1",
        **extra,
    }


def write_gemini_home(home: Path) -> Path:
    folder = home / ".gemini"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "settings.json").write_text(json.dumps(gemini_settings(), indent=2) + "\n", encoding="utf-8")
    return folder
