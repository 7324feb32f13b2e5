"""Fixtures for recipe tests."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write dedented YAML text to a file in tmp_path and return its path."""

    def _write(text: str, name: str = "recipe.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return _write
