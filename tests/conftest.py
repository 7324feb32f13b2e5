"""Fixtures shared by every test area: the local multi-node Slurm started by scripts/slurm-up,
and the tiny real checkpoint (tests/tiny_model.py) that real engines and frontends serve.

Tests that need Slurm take the `slurm_cluster` fixture. On a machine without the
rig they are skipped with the reason; under the test command (scripts/test sets
DISAGG_REQUIRE_SLURM=1 after starting the rig) an unreachable cluster is a failure,
so a broken rig can never turn the Slurm tests into silent skips.

Tests marked `corpus` sweep the team's recipe corpus (tests/needs.py): they skip, naming
it, where ../shared/recipes is absent, and fail instead under DISAGG_REQUIRE_CORPUS=1.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from needs import require_corpus
from tiny_model import TinyModel, build_tiny_model

RIG_DIR = Path(os.environ.get("DISAGG_SLURM_DIR", "/tmp/disagg-slurm"))
RIG_CONF = RIG_DIR / "etc" / "slurm.conf"


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A `corpus` test runs only with the corpus beside the checkout (or fails in CI).

    A grouped test fails where pytest-xdist could not apply its group (it tags node ids,
    which some pytest releases no longer let it do), instead of running beside the tests
    it must not overlap."""
    if item.get_closest_marker("corpus") is not None:
        require_corpus()
    grouped = item.get_closest_marker("xdist_group") is not None
    if grouped and item.config.getoption("loadgroup", False) and "@" not in item.nodeid:
        pytest.fail(
            "its xdist_group is not applied by this pytest and pytest-xdist; keep them at "
            "the versions uv.lock pins",
            pytrace=False,
        )


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under parallel workers (`-n 3 --dist loadgroup`), the tests that share the Slurm
    rig run one after another on one worker; the rest spread over the other workers.

    A real engine takes every CPU it is given and starves whatever runs beside it (a
    simulated worker then misses its health checks for 30 s), so scripts/test runs the
    suite in two passes: DISAGG_REAL_ENGINES=apart leaves the `real_engine` tests out of
    the parallel pass, =only selects just them for a pass of their own, one at a time."""
    engines = os.environ.get("DISAGG_REAL_ENGINES")
    if engines in ("apart", "only"):
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            engine = item.get_closest_marker("real_engine") is not None
            (keep if engine == (engines == "only") else drop).append(item)
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    for item in items:
        if item.get_closest_marker("slurm") or "slurm_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("slurm"))


def _unavailable(reason: str) -> None:
    if os.environ.get("DISAGG_REQUIRE_SLURM") == "1":
        pytest.fail(f"the local Slurm is required but {reason}", pytrace=False)
    pytest.skip(f"{reason}: run scripts/slurm-up")


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[list[str]]:
    """The rig's node names (three nodes, eight GRES GPUs each)."""
    if not os.environ.get("SLURM_CONF") and RIG_CONF.is_file():
        os.environ["SLURM_CONF"] = str(RIG_CONF)
    if shutil.which("sinfo") is None:
        _unavailable("Slurm client commands are not installed")
    try:
        out = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%N %t"],
            capture_output=True,
            text=True,
            timeout=15,
            check=True,
        ).stdout
    except (subprocess.SubprocessError, OSError) as exc:
        _unavailable(f"sinfo cannot reach a Slurm cluster ({exc})")
    nodes = sorted({line.split()[0] for line in out.splitlines() if line.strip()})
    if len(nodes) < 3:
        _unavailable(f"the local Slurm needs 3 nodes, sinfo lists {nodes}")
    yield nodes


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> TinyModel:
    """The tiny random-weight Llama with its tokenizer, built once per test session."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))
