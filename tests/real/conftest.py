"""Fixtures for the real-engine tests: the engine environment, built once and reused."""

from __future__ import annotations

from pathlib import Path

import pytest

from .vllm_support import engine_env


@pytest.fixture(scope="session")
def vllm_env() -> Path:
    """The vLLM CPU build's environment (scripts/engine-env vllm); never skipped."""
    return engine_env("vllm")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A real engine run on a loaded 2-core machine can take longer than the suite's
    300 s hang guard; its own `disagg run` subprocess limit (RUN_TIMEOUT_S) is what ends
    a stuck one, so the guard sits just above it."""
    from .test_vllm_run import RUN_TIMEOUT_S

    for item in items:
        if item.get_closest_marker("real_engine") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(RUN_TIMEOUT_S + 60))
