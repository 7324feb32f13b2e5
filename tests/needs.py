"""What a test needs from outside the checkout, and what happens when it is missing.

A test that cannot run here skips with a reason naming what it needs. Where the test
command guarantees the need (scripts/test, or CI through .ci/run, sets the guard variable
to 1), the same absence fails the test instead, so a broken machine never turns a real
test into a silent skip.

The team's recipe corpus, ../shared/recipes beside the checkout, is one such need: it is
there on the team's machines and in CI, not in a user's clone. Tests that sweep it carry
the `corpus` marker (tests/conftest.py checks it before each one runs).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

SHARED_RECIPES = Path(__file__).resolve().parents[2] / "shared" / "recipes"
CORPUS = SHARED_RECIPES / "srt-slurm-v1.0.68"  # srt-slurm v1.0.68's recipes
CORPUS_NEEDED = "needs ../shared/recipes (the team's recipe corpus)"
CORPUS_GUARD = "DISAGG_REQUIRE_CORPUS"

corpus = pytest.mark.corpus


def unavailable(reason: str, guard: str) -> NoReturn:
    """Skip with `reason`, or fail with it where `guard`=1 says it must be here."""
    if os.environ.get(guard) == "1":
        pytest.fail(f"{reason}, and {guard}=1 says it must be here", pytrace=False)
    pytest.skip(reason)


def require_corpus() -> None:
    """The `corpus` marker's check: the corpus is here, or the test skips (fails in CI)."""
    if not SHARED_RECIPES.is_dir():
        unavailable(CORPUS_NEEDED, CORPUS_GUARD)
