"""Fixtures for the real-engine tests: the engine environment, built once and reused."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from pathlib import Path

import pytest

from .vllm_support import engine_env


@pytest.fixture(scope="session")
def vllm_env() -> Path:
    """The vLLM CPU build's environment (scripts/engine-env vllm); never skipped."""
    return engine_env("vllm")


@pytest.fixture(autouse=True)
def one_engine_run_at_a_time(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """A real engine takes every CPU it is given: under parallel workers (the Slurm rig's
    lane runs one too), real-engine tests wait for each other on a lock in the directory
    the workers' temporary directories share."""
    if request.node.get_closest_marker("real_engine") is None:
        yield
        return
    lock = tmp_path_factory.getbasetemp().parent / "real-engine.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # released when the file closes
        yield


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A real engine run on a loaded 2-core machine can take longer than the suite's
    300 s hang guard; its own `disagg run` subprocess limit (RUN_TIMEOUT_S) is what ends
    a stuck one, so the guard sits just above it."""
    from .test_vllm_run import RUN_TIMEOUT_S

    for item in items:
        if item.get_closest_marker("real_engine") and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(RUN_TIMEOUT_S + 60))
