"""Fixtures: two real tiny model repos and a local Hub-compatible server serving them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .ckpt import write_checkpoint, write_tokenizer
from .hub_server import HubRepo, HubServer

MAIN = "org-a/tiny-main"
DRAFT = "org-b/tiny-draft"
TOKENIZER = "org-c/tiny-tokenizer"  # not a checkpoint: staged as an explicit extra


@pytest.fixture(scope="session")
def repo_sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("repos")
    (root / "tokenizer").mkdir()
    write_tokenizer(root / "tokenizer", "json")
    return {
        TOKENIZER: root / "tokenizer",
        MAIN: write_checkpoint(root / "main", shards=3, tokenizer="json", hidden=64),
        DRAFT: write_checkpoint(root / "draft", shards=1, tokenizer="tiktoken", seed=7),
    }


@pytest.fixture
def hub(repo_sources: dict[str, Path]) -> Iterator[HubServer]:
    repos = [HubRepo.from_directory(repo_id, path) for repo_id, path in repo_sources.items()]
    with HubServer(repos) as server:
        yield server


@pytest.fixture
def hf_env(tmp_path: Path, hub: HubServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Environment for stager subprocesses: the local hub, no token, no offline mode."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    env = {
        "HF_ENDPOINT": hub.endpoint,
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture(scope="session")
def slurm_nodes(slurm_cluster: list[str]) -> list[str]:
    """Node names of the local Slurm (see tests/conftest.py)."""
    return slurm_cluster
