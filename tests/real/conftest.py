"""Fixtures for the real-engine tests: the engine environment, built once and reused."""

from __future__ import annotations

from pathlib import Path

import pytest

from .vllm_support import engine_env


@pytest.fixture(scope="session")
def vllm_env() -> Path:
    """The vLLM CPU build's environment (scripts/engine-env vllm); never skipped."""
    return engine_env("vllm")
