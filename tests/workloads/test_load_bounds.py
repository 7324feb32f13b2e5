"""A load no cluster could serve is refused at lint and plan time, naming the bound,
instead of a run that builds requests until memory runs out."""

from __future__ import annotations

from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.plan.from_recipe import plans_for
from disagg.recipe.limits import MAX_CONCURRENCY, MAX_POINT_REQUESTS, MAX_SEQUENCE_TOKENS
from disagg.recipe.lint import lint_paths

ROOT = Path(__file__).resolve().parents[2]

CASES = [
    ('  concurrencies: "100000000"\n', "concurrency (100,000,000)", f"{MAX_CONCURRENCY:,}"),
    ("  concurrencies: [4, 2000000]\n", "concurrency (2,000,000)", f"{MAX_CONCURRENCY:,}"),
    ("  isl: 100000000\n", "benchmark.isl", str(MAX_SEQUENCE_TOKENS)),
    ("  osl: 100000000\n", "benchmark.osl", str(MAX_SEQUENCE_TOKENS)),
    ("  num_prompts: 100000000\n", "benchmark.num_prompts", str(MAX_POINT_REQUESTS)),
    ("  num_prompts_mult: 100000000\n", "requests of one point", f"{MAX_POINT_REQUESTS:,}"),
]


def recipe(tmp_path: Path, extra: str) -> Path:
    """The simulated 1p1d example with `extra`'s benchmark fields in place of its own."""
    text = (ROOT / "examples" / "sim" / "1p1d.yaml").read_text()
    head, sep, rest = text.partition("\nbenchmark:\n")
    assert sep, "the example has a benchmark section"
    for line in extra.splitlines():
        key = line.split(":")[0] + ":"
        rest = "\n".join(kept for kept in rest.split("\n") if not kept.startswith(key))
    path = tmp_path / "r.yaml"
    path.write_text(head + sep + extra + rest)
    return path


@pytest.mark.parametrize(("extra", "named", "limit"), CASES)
def test_plan_refuses_a_load_past_its_bound_naming_it(
    tmp_path: Path, extra: str, named: str, limit: str
) -> None:
    with pytest.raises(DisaggError) as info:
        plans_for([str(recipe(tmp_path, extra))], None)
    assert named in str(info.value) and limit in str(info.value)


@pytest.mark.parametrize(("extra", "named", "limit"), CASES)
def test_lint_refuses_it_too(tmp_path: Path, extra: str, named: str, limit: str) -> None:
    report = lint_paths([recipe(tmp_path, extra)])
    errors = [f.message for f in report.findings if f.severity.value == "error"]
    assert any(named in message and limit in message for message in errors), errors


def test_loads_at_the_bounds_still_plan(tmp_path: Path) -> None:
    extra = f"  concurrencies: [{MAX_CONCURRENCY}]\n  num_prompts: {MAX_POINT_REQUESTS // 2}\n"
    [plan] = plans_for([str(recipe(tmp_path, extra))], None)
    assert plan.bench.points[0].concurrency == MAX_CONCURRENCY
