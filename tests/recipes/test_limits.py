"""The recipe's `limits:` section reaches the plan (and plan.json) unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from disagg.errors import DisaggError
from disagg.plan.from_recipe import plans_for
from disagg.plan.limits import LimitsPlan, limits_plan
from disagg.plan.model import Plan
from disagg.recipe.job_sections import LimitsSection

ROOT = Path(__file__).resolve().parents[2]


def recipe_with(tmp_path: Path, limits: str) -> str:
    text = (ROOT / "examples" / "sim" / "1p1d.yaml").read_text() + limits
    path = tmp_path / "r.yaml"
    path.write_text(text)
    return str(path)


def test_limits_from_the_recipe_land_in_plan_json(tmp_path: Path) -> None:
    limits = (
        "\nlimits:\n  request_timeout: 5\n  stall_timeout: null\n  point_timeout: 600\n"
        "  run_timeout: 3600\n  liveness_timeout: 10\n  liveness_interval: 0.5\n"
    )
    [plan] = plans_for([recipe_with(tmp_path, limits)], None)
    plan.write(tmp_path)
    read = Plan.read(tmp_path).limits
    assert (read.request_timeout_s, read.stall_timeout_s, read.point_timeout_s) == (5, None, 600)
    assert (read.run_timeout_s, read.liveness_timeout_s, read.liveness_interval_s) == (
        3600,
        10,
        0.5,
    )


def test_defaults_bound_a_hung_worker_without_a_limits_section(tmp_path: Path) -> None:
    [plan] = plans_for([recipe_with(tmp_path, "")], None)
    assert plan.limits.liveness_timeout_s == 30 and plan.limits.request_timeout_s == 900


def test_a_misspelled_limit_is_refused_with_its_position(tmp_path: Path) -> None:
    with pytest.raises(DisaggError) as info:
        plans_for([recipe_with(tmp_path, "\nlimits:\n  request_timout: 5\n")], None)
    assert "request_timout" in str(info.value)


def test_plan_output_shows_the_limits(tmp_path: Path) -> None:
    import subprocess
    import sys

    recipe = recipe_with(tmp_path, "\nlimits:\n  request_timeout: 60\n  liveness_timeout: 10\n")
    shown = subprocess.run(
        [sys.executable, "-m", "disagg", "plan", recipe], capture_output=True, text=True
    )
    assert shown.returncode == 0, shown.stderr
    assert "request 60s, stall 300s, point none, run none, liveness 10s" in shown.stdout


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 1800.0),
        ("30:15", 1815.0),
        ("04:00:00", 14400.0),
        ("1-00", 86400.0),
        ("1-02:30", 95400.0),
        ("1-02:30:10", 95410.0),
        ("UNLIMITED", None),
        ("0", None),
        ("1:2:3:4", None),
    ],
)
def test_slurm_time_limits_read_as_slurm_reads_them(text: str, seconds: float | None) -> None:
    from disagg.plan.limits import slurm_seconds

    assert slurm_seconds(text) == seconds


def test_a_slurm_time_limit_ends_the_run_first_unless_run_timeout_is_set(
    tmp_path: Path,
) -> None:
    # the orchestrator stops a minute early: teardown and summary before Slurm's kill
    [plan] = plans_for([recipe_with(tmp_path, '\nslurm:\n  time_limit: "00:30:00"\n')], None)
    assert plan.limits.run_timeout_s == 1800 - 60
    [short] = plans_for([recipe_with(tmp_path, '\nslurm:\n  time_limit: "5"\n')], None)
    assert short.limits.run_timeout_s == 300 - 30  # a tenth of a short limit
    explicit = '\nslurm:\n  time_limit: "00:30:00"\nlimits:\n  run_timeout: 100\n'
    [own] = plans_for([recipe_with(tmp_path, explicit)], None)
    assert own.limits.run_timeout_s == 100


def test_another_slurm_time_limit_moves_only_the_run_limit_it_set(tmp_path: Path) -> None:
    # `disagg submit --resume RUN_DIR --time-limit T` after a TIMEOUT
    from disagg.plan.limits import retimed_limits

    [plan] = plans_for([recipe_with(tmp_path, '\nslurm:\n  time_limit: "1"\n')], None)
    longer = retimed_limits(plan.limits, plan.config.get("limits"), "01:00:00")
    assert (plan.limits.run_timeout_s, longer.run_timeout_s) == (54, 3600 - 60)
    assert longer.model_copy(update={"run_timeout_s": 54}) == plan.limits  # nothing else
    explicit = '\nslurm:\n  time_limit: "1"\nlimits:\n  run_timeout: 100\n'
    [own] = plans_for([recipe_with(tmp_path, explicit)], None)
    assert retimed_limits(own.limits, own.config.get("limits"), "01:00:00") == own.limits


def test_a_serving_gap_the_probes_cannot_resolve_is_refused_at_its_position(
    tmp_path: Path,
) -> None:
    recipe = recipe_with(tmp_path, "\nlimits:\n  liveness_interval: 2\n  serving_gap: 1\n")
    with pytest.raises(DisaggError) as info:
        plans_for([recipe], None)
    error = info.value
    assert error.message.startswith("limits.serving_gap (1 s) must be longer than")
    assert error.location is not None and error.location.line == len(
        Path(recipe).read_text().splitlines()
    )
    assert error.hint is not None and "twice liveness_interval" in error.hint


def test_the_serving_gap_reaches_the_plan(tmp_path: Path) -> None:
    [default] = plans_for([recipe_with(tmp_path, "")], None)
    assert default.limits.serving_gap_s == 5
    [plan] = plans_for([recipe_with(tmp_path, "\nlimits:\n  serving_gap: 12\n")], None)
    assert plan.limits.serving_gap_s == 12


def test_an_infinite_optional_limit_means_no_limit_and_plan_json_reads_back(
    tmp_path: Path,
) -> None:
    limits = "\nlimits:\n  stall_timeout: .inf\n  point_timeout: .inf\n  run_timeout: .inf\n"
    [plan] = plans_for([recipe_with(tmp_path, limits)], None)
    assert (plan.limits.stall_timeout_s, plan.limits.point_timeout_s) == (None, None)
    assert plan.limits.run_timeout_s is None
    plan.write(tmp_path)
    assert Plan.read(tmp_path).limits == plan.limits  # what `disagg report` and the job read


@pytest.mark.parametrize(
    "name", ["request_timeout", "liveness_timeout", "liveness_interval", "serving_gap"]
)
def test_an_infinite_limit_that_always_applies_is_refused_naming_it(
    tmp_path: Path, name: str
) -> None:
    with pytest.raises(DisaggError) as info:
        plans_for([recipe_with(tmp_path, f"\nlimits:\n  {name}: .inf\n")], None)
    assert f"limits.{name}" in str(info.value) and "finite number of seconds" in str(info.value)


SECONDS = st.one_of(
    st.none(),
    st.integers(min_value=-5, max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(LimitsSection.model_fields)), SECONDS))
def test_any_limits_section_is_refused_or_round_trips_through_json(values: dict[str, Any]) -> None:
    try:
        section = LimitsSection.model_validate(values)
    except ValidationError:
        return
    planned = limits_plan(section, "01:00:00")
    assert LimitsPlan.model_validate_json(planned.model_dump_json()) == planned


CUSTOM = ROOT / "tests" / "workloads" / "data" / "sim-custom.yaml"


def custom_with(tmp_path: Path, limits: str) -> str:
    path = tmp_path / "custom.yaml"
    path.write_text(CUSTOM.read_text().replace("\n  benchmark:\n", f"\n{limits}  benchmark:\n", 1))
    return f"{path}:base"


@pytest.mark.parametrize("name", ["request_timeout", "stall_timeout", "point_timeout"])
def test_a_client_limit_set_for_a_custom_command_is_refused_not_shown_and_ignored(
    tmp_path: Path, name: str
) -> None:
    with pytest.raises(DisaggError) as info:
        plans_for([custom_with(tmp_path, f"  limits:\n    {name}: 60\n")], None)
    assert f"limits.{name}" in str(info.value) and "custom" in str(info.value)
    assert info.value.location is not None and info.value.location.line is not None


def test_a_custom_command_plan_does_not_show_the_limits_it_cannot_apply(tmp_path: Path) -> None:
    import subprocess
    import sys

    [plan] = plans_for([custom_with(tmp_path, "  limits:\n    run_timeout: 600\n")], None)
    assert plan.limits.client_limits is False and plan.limits.run_timeout_s == 600
    shown = subprocess.run(
        [sys.executable, "-m", "disagg", "plan", custom_with(tmp_path, "")],
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 0, shown.stderr
    assert "stall 300s" not in shown.stdout and "point none" not in shown.stdout
    assert "not applied" in shown.stdout
