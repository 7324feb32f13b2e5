"""Fixtures for the load generator tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """Where a test's result files go."""
    return tmp_path / "results"
