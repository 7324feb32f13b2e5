"""Every file disagg writes it reads back, and no result file, however mangled, makes
`report`, `collect` or `status` raise anything but a clear error.

Hypothesis writes plan.json with any limits a recipe may give, state.json with any
numbers a client may report, and result files with any values in any field (NaN,
infinities, negatives, wrong types, deep nesting, truncated bytes). Memory is bounded
by what the readers are handed: a result file here is at most a few hundred KB.
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disagg.bench.gate import strict_json_value, verdict
from disagg.bench.inferencex import to_row
from disagg.bench.results import read_result
from disagg.bench.runner import headline
from disagg.errors import DisaggError
from disagg.launch.state import PointState, RunState
from disagg.plan.limits import limits_plan
from disagg.plan.model import Plan
from disagg.recipe.job_sections import LimitsSection
from disagg.report.aggregate import load_run
from disagg.workloads.collect import normalise, valid_results

from .report_fixtures import RunFactory, make_plan, make_result

FIELDS = sorted(make_result(conc=1))
NUMBERS = st.one_of(
    st.sampled_from([5e-324, 1e-310, 1e308, -0.0, 0]),  # rates over these overflow
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**20), max_value=10**20),
)
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=8)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)
MUTATIONS = st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, min_size=1, max_size=6)
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def strict_json(value: Any) -> None:
    json.dumps(value, allow_nan=False)  # raises on NaN or an infinity


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(sorted(LimitsSection.model_fields)),
        st.one_of(st.none(), st.floats(min_value=0.001, allow_infinity=True, allow_nan=False)),
    )
)
def test_plan_json_with_any_accepted_limits_reads_back(values: dict[str, Any]) -> None:
    from pydantic import ValidationError

    try:
        section = LimitsSection.model_validate(values)
    except ValidationError:
        return
    plan = make_plan().model_copy(update={"limits": limits_plan(section, "4:00:00")})
    assert Plan.model_validate_json(plan.model_dump_json()) == plan


@settings(max_examples=200, deadline=None)
@given(numbers=st.dictionaries(st.sampled_from(FIELDS), NUMBERS))
def test_state_json_with_any_client_numbers_reads_back(
    numbers: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    run_dir = tmp_path_factory.mktemp("state")
    point = PointState(key="conc1", headline=headline(numbers))
    state = RunState(
        name="r", selector="r.yaml", run_dir=str(run_dir), simulated=True, executor="local",
        orchestrator_pid=1, points=[point],
    )  # fmt: skip
    state.write(run_dir)
    read = RunState.read(run_dir)
    assert read is not None and read.points[0].headline == point.headline
    assert all(math.isfinite(v) for v in read.points[0].headline.values())


def test_a_state_json_holding_null_headline_numbers_still_reads(tmp_path: Path) -> None:
    state = RunState(
        name="r", selector="r.yaml", run_dir=str(tmp_path), simulated=True, executor="local",
        orchestrator_pid=1, points=[PointState(key="conc1")],
    )  # fmt: skip
    data = json.loads(state.model_dump_json())
    data["points"][0]["headline"] = {"output_throughput": None, "completed": 4, "x": math.nan}
    (tmp_path / "state.json").write_text(json.dumps(data))  # NaN as Python writes it
    read = RunState.read(tmp_path)
    assert read is not None and read.points[0].headline == {"completed": 4.0}


@SETTINGS
@given(MUTATIONS)
def test_any_client_point_file_is_judged_and_written_as_strict_json(
    changes: dict[str, Any],
) -> None:
    data = make_result(conc=4) | changes
    plan = make_plan(simulated=True)
    result = normalise(data, plan, Path("client.json"))
    strict_json(result)
    if result["valid"]:
        with contextlib.suppress(DisaggError):  # a row InferenceX cannot read: exit 2, named
            row = to_row(result, allow_simulated=True)
            strict_json(row)
            assert all(v >= 0 for v in row.values() if isinstance(v, int | float)), row
    if result["valid"]:
        assert verdict(data, plan.bench.max_failure_ratio) is None
        for key in ("completed", "duration", "output_throughput"):
            assert isinstance(data[key], int | float) and data[key] >= 0


def _mangle(path: Path, changes: dict[str, Any], cut: int | None) -> None:
    data = json.loads(path.read_text()) | changes
    text = json.dumps(data)  # NaN and Infinity as Python writes them: what a client may too
    path.write_text(text[:cut] if cut is not None else text)


@SETTINGS
@given(changes=MUTATIONS, cut=st.one_of(st.none(), st.integers(min_value=0, max_value=4000)))
def test_report_and_collect_over_mangled_result_files_never_raise(
    make_run: RunFactory,
    tmp_path_factory: pytest.TempPathFactory,
    changes: dict[str, Any],
    cut: int | None,
) -> None:
    run_dir = make_run("r", parent=tmp_path_factory.mktemp("runs"), concs=(1, 4))
    [victim, _] = sorted((run_dir / "results").glob("*.json"))
    _mangle(victim, changes, cut)

    run = load_run(run_dir)  # what `disagg report` reads
    assert len(run.points) + len(run.skipped) == 2
    for point in run.points:
        assert all(math.isfinite(v) for v in point.metrics.values())
        assert verdict(read_result(point.path) or {}, 0.01) is None

    plan = Plan.read(run_dir)  # what `disagg collect` reads
    for _, found in valid_results(run_dir, plan):
        data = read_result(found)
        assert data is not None
        strict_json(data)
        with contextlib.suppress(DisaggError):  # a row InferenceX cannot read: exit 2, named
            row = to_row(data, allow_simulated=True)
            strict_json(row)
            numbers = [v for v in row.values() if isinstance(v, int | float)]
            assert all(v >= 0 for v in numbers), row


def test_a_result_file_nested_past_what_json_decodes_is_skipped(make_run: RunFactory) -> None:
    run_dir = make_run("r", concs=(1,))
    [victim] = (run_dir / "results").glob("*.json")
    victim.write_text(
        '{"point": "conc1", "valid": true, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    )
    run = load_run(run_dir)
    assert run.points == [] and len(run.skipped) == 1


@settings(max_examples=100, deadline=None)
@given(metrics=st.dictionaries(st.sampled_from(FIELDS), NUMBERS, min_size=1))
def test_a_result_file_disagg_writes_is_strict_json_it_reads_back(
    metrics: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    from disagg.bench.results import write_point

    out = tmp_path_factory.mktemp("point")
    result = make_result(conc=4) | metrics | {"errors": []}
    path = write_point(out, "p_conc4", result, [], 0.0)
    text = path.read_text()
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} written"))
    read = read_result(path)
    assert read is not None and read["point"] == strict_json_value(result["point"])


MANGLED = {
    "nan and infinity": lambda text: text.replace(
        '"duration": ', '"duration": NaN, "x": ', 1
    ).replace('"output_throughput": ', '"output_throughput": Infinity, "y": ', 1),
    "an overflowing number": lambda text: text.replace(
        '"duration": ', '"duration": 1e400, "x": ', 1
    ),
    "negative counts": lambda text: text.replace('"completed": ', '"completed": -5, "x": ', 1),
    "truncated": lambda text: text[: len(text) // 3],
    "not an object": lambda text: "[1, 2, 3]",
    "deeply nested": lambda text: (
        '{"point": "conc1", "valid": true, "x": ' + "[" * 50_000 + "]" * 50_000 + "}"
    ),
    "not utf-8": lambda text: text[:40] + "\udcff",
}


@pytest.mark.parametrize("mangle", sorted(MANGLED))
def test_report_and_collect_commands_over_a_mangled_result_exit_cleanly(
    make_run: RunFactory, tmp_path: Path, mangle: str
) -> None:
    import subprocess
    import sys

    run_dir = make_run("r", concs=(1, 4))
    victim = sorted((run_dir / "results").glob("*.json"))[0]
    victim.write_bytes(MANGLED[mangle](victim.read_text()).encode("utf-8", "surrogateescape"))
    for args in (
        ("report", run_dir, "--out", tmp_path / "report", "--json"),
        ("collect", run_dir, "--out", tmp_path / "rows", "--json"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "disagg", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode in (0, 1, 2), done.stderr
        assert "Traceback" not in done.stderr, done.stderr
    for row in (tmp_path / "rows").glob("*.json"):
        strict_json(json.loads(row.read_text()))
