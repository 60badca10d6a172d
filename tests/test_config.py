"""config.py: defaults, the YAML file, environment overrides, and errors that name the bad key."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memvault import config, paths
from memvault.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_defaults_without_a_file(memvault_home: Path) -> None:
    cfg = config.load()
    assert cfg.memory.enabled is True and cfg.memory.review_mode == "interactive"
    assert cfg.vault.folder == "MemoryVault" and cfg.vault.default_group == "personal-private"
    assert cfg.recall.k == 5 and (cfg.recall.vector_weight, cfg.recall.keyword_weight) == (0.7, 0.3)
    assert cfg.vault_root is None and cfg.source is None
    assert paths.config_file() == memvault_home / "config.yaml"
    assert paths.state_dir() == memvault_home / "state"


def test_file_values_and_env_overrides(memvault_home: Path, tmp_path: Path) -> None:
    write(
        memvault_home / "config.yaml",
        "memory:\n  enabled: false\nrecall:\n  k: 8\nvault:\n  root: ~/Obsidian\n"
        "  ignore: [Archive, 'Clippings/*']\nembedding:\n  model: all-mpnet-base-v2\n",
    )
    cfg = config.load()
    assert cfg.memory.enabled is False and cfg.recall.k == 8 and cfg.vault.ignore == ("Archive", "Clippings/*")
    assert cfg.vault_root == Path("~/Obsidian").expanduser() and cfg.source == str(memvault_home / "config.yaml")
    env = {"MEMVAULT_VAULT": str(tmp_path), "MEMVAULT_ENABLED": "yes", "AGENT_TOOLKIT_EMBEDDING_MODEL": "seed-model"}
    cfg = config.load(env=env)
    assert cfg.vault_root == tmp_path and cfg.memory.enabled is True and cfg.embedding.model == "seed-model"
    cfg = config.load(env={**env, "MEMVAULT_EMBEDDING_MODEL": "ours"})
    assert cfg.embedding.model == "ours"


def test_memvault_config_points_at_another_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = write(tmp_path / "elsewhere.yaml", "recall:\n  k: 3\n")
    monkeypatch.setenv("MEMVAULT_CONFIG", str(other))
    assert config.load().recall.k == 3


@pytest.mark.parametrize("xdg", ["unset", "absolute", "relative", "empty", "trailing-slash"])
@pytest.mark.parametrize("home", ["absolute", "relative", "empty", "unset"])
def test_without_memvault_home_the_folders_are_where_platformdirs_puts_them(
    xdg: str, home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Linux `paths` reads the XDG variables itself (platformdirs costs a prompt hook 15 ms); it must agree."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the XDG rules are read by hand on Linux only")
    from platformdirs.unix import Unix

    monkeypatch.delenv("MEMVAULT_HOME", raising=False)
    monkeypatch.delenv("MEMVAULT_CONFIG", raising=False)
    homes = {"absolute": str(tmp_path / "me"), "relative": "me", "empty": ""}
    if home == "unset":
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", homes[home])
    for variable in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        values = {"absolute": str(tmp_path / variable), "relative": "rel/dir", "empty": "",
                  "trailing-slash": f"{tmp_path / variable}/"}  # fmt: skip
        if xdg == "unset":
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, values[xdg])
    theirs = Unix(paths.APP, appauthor=False)
    assert paths.config_file() == theirs.user_config_path / "config.yaml"
    assert paths.state_dir() == theirs.user_state_path
    assert paths.cache_dir() == theirs.user_cache_path
    assert paths.state_dir().is_absolute()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("recal:\n  k: 3\n", "unknown section 'recal' (did you mean 'recall'?)"),
        ("recall:\n  kk: 3\n", "unknown key 'recall.kk' (did you mean 'recall.k'?)"),
        ("recall:\n  k: five\n", "'recall.k' must be a number, got 'five'"),
        ("recall:\n  k: 0\n", "'recall.k' must be between 1 and 100, got 0"),
        ("recall:\n  vector_weight: 1.5\n", "'recall.vector_weight' must be between 0 and 1"),
        ("memory:\n  enabled: maybe\n", "'memory.enabled' must be true or false, got 'maybe'"),
        ("memory:\n  review_mode: loud\n", "'memory.review_mode' must be one of interactive, silent, got 'loud'"),
        ("vault:\n  ignore: 3\n", "'vault.ignore' must be a list of strings"),
        ("- just\n- a list\n", "the top level must be a mapping"),
        ("recall: [1, 2]\n", "'recall' must be a mapping of keys"),
        ("recall:\n  k: [unclosed\n", "cannot read config"),
        ("git:\n  message: '{op} {nope}'\n", "'git.message' may only use {op}, {target} and {reason}"),
        ("vault:\n  folder: ../escape\n", "'vault.folder' must be one folder name inside the vault"),
        ("vault:\n  default_group: My Stuff\n", "'vault.default_group' must be a slug like 'my-stuff'"),
    ],
)
def test_invalid_values_name_the_key(memvault_home: Path, text: str, message: str) -> None:
    write(memvault_home / "config.yaml", text)
    with pytest.raises(ConfigError) as exc:
        config.load()
    assert message in str(exc.value) and str(memvault_home / "config.yaml") in str(exc.value)


def test_bad_env_value_names_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"\$MEMVAULT_ENABLED: 'memory.enabled' must be true or false"):
        config.load(env={"MEMVAULT_ENABLED": "perhaps"})


def test_write_vault_root_keeps_other_keys(memvault_home: Path, tmp_path: Path) -> None:
    cfg_file = write(memvault_home / "config.yaml", "# my settings\nrecall:\n  k: 9\n")
    config.write_vault_root(tmp_path)
    cfg = config.load()
    assert cfg.vault_root == tmp_path and cfg.recall.k == 9
    assert cfg_file.read_text().startswith("# my settings\nrecall:\n  k: 9\nvault:\n  root: ")
    assert cfg_file.stat().st_mode & 0o777 in (0o600, 0o644, 0o664)


def test_as_dict_round_trips() -> None:
    cfg = config.from_dict({"recall": {"k": 7}, "vault": {"ignore": ["A"]}})
    assert config.from_dict(config.as_dict(cfg)) == cfg


@pytest.mark.parametrize("data", [b"", b"/home/u/Obsidian", "/tmp/caf\udce9".encode("utf-8", "surrogateescape")])
def test_the_folder_digests_are_sha256_whichever_module_computes_them(data: bytes) -> None:
    """A vault's state folder is named by this digest: another value would lose its index and journal."""
    import hashlib

    assert paths.sha256_hex(data) == hashlib.sha256(data).hexdigest()
