"""Finding runs and loading their points: only valid points pass, bad input is a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.errors import EXIT_USAGE, DisaggError
from disagg.report.aggregate import find_run_dirs, iter_valid_results, load_run, load_runs

from .report_fixtures import RunFactory, make_result


def test_a_parent_directory_yields_every_run_below_it(make_run: RunFactory, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    make_run("b-run", parent=sweep / "day2")
    make_run("a-run", parent=sweep)
    (sweep / "notes").mkdir()  # neither a run nor holding one

    runs = find_run_dirs([sweep])

    assert [run.name for run in runs] == ["a-run", "b-run"]


def test_the_same_run_given_twice_is_reported_once(make_run: RunFactory, tmp_path: Path) -> None:
    run = make_run("r1")
    assert find_run_dirs([run, tmp_path]) == [run]


@pytest.mark.parametrize("kind", ["missing", "file", "empty"])
def test_a_path_without_runs_is_a_usage_error(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "x"
    if kind == "file":
        path.write_text("")
    elif kind == "empty":
        path.mkdir()

    with pytest.raises(DisaggError) as caught:
        find_run_dirs([path])

    assert caught.value.exit_code == EXIT_USAGE
    assert str(path) in str(caught.value)
    assert caught.value.hint


def test_points_load_with_plan_identity_sorted_by_concurrency(make_run: RunFactory) -> None:
    run = load_run(make_run("r1", concs=(64, 1, 16), prefill_gpus=4, decode_gpus=8))

    assert run.selector == "recipes/h200/dsr1-1k1k.yaml:override_dep8"
    assert run.short_variant == "dsr1-1k1k.yaml:override_dep8"
    assert run.config is not None and run.config["name"] == "dsr1-1k1k"
    assert [p.conc for p in run.points] == [1, 16, 64]
    point = run.points[0]
    assert (point.prefill_gpus, point.decode_gpus, point.total_gpus) == (4, 8, 12)
    assert point.key == "conc1"
    assert point.metric("median_ttft_ms") == pytest.approx(73.5)
    assert point.interactivity == pytest.approx(point.metrics["median_intvty"])


def test_points_marked_invalid_are_skipped_with_their_reason(make_run: RunFactory) -> None:
    run = load_run(make_run("r1", invalid=(16,)))

    assert 16 not in [p.conc for p in run.points]
    assert len(run.points) == 4
    [skipped] = run.skipped
    assert "_conc16_" in skipped.path.name
    assert "37 of 100 requests failed" in skipped.reason


def _write(run_dir: Path, name: str, data: object) -> None:
    (run_dir / "results" / name).write_text(json.dumps(data))


def test_a_point_claiming_valid_is_still_gated_on_what_it_contains(make_run: RunFactory) -> None:
    run_dir = make_run("r1", concs=(1,))
    too_many_failures = make_result(conc=8, failed=5)  # 5 of 85: above the plan's 1%
    no_output = make_result(conc=32) | {"output_throughput": 0.0, "total_output_tokens": 0}
    nothing_completed = make_result(conc=128) | {"completed": 0}
    _write(run_dir, "r1_conc8_gpus_16_ctx_8_gen_8.json", too_many_failures)
    _write(run_dir, "r1_conc32_gpus_16_ctx_8_gen_8.json", no_output)
    _write(run_dir, "r1_conc128_gpus_16_ctx_8_gen_8.json", nothing_completed)

    run = load_run(run_dir)

    assert [p.conc for p in run.points] == [1]
    reasons = {s.path.name.split("_")[1]: s.reason for s in run.skipped}
    assert "5 of 85 requests failed" in reasons["conc8"]
    assert "no output tokens" in reasons["conc32"]
    assert "no completed requests" in reasons["conc128"]


def test_failures_within_the_threshold_keep_the_point(make_run: RunFactory) -> None:
    run_dir = make_run("r1", concs=())
    _write(run_dir, "r1_conc64_gpus_16_ctx_8_gen_8.json", make_result(conc=64, failed=1))

    assert [p.conc for p in load_run(run_dir).points] == [64]  # 1 of 641 < 1%


def test_unreadable_and_foreign_json_files_are_skipped_not_fatal(make_run: RunFactory) -> None:
    run_dir = make_run("r1", concs=(4,))
    (run_dir / "results" / "broken_conc8.json").write_text('{"completed": 3,\n  "x": }')
    _write(run_dir, "manifest.json", {"files": []})
    _write(run_dir, "list.json", [1, 2])

    run = load_run(run_dir)

    assert [p.conc for p in run.points] == [4]
    reasons = {s.path.name: s.reason for s in run.skipped}
    assert set(reasons) == {"broken_conc8.json", "manifest.json", "list.json"}
    assert all("not a point result" in reason for reason in reasons.values())


def test_without_plan_gpu_counts_and_concurrency_come_from_the_result(
    make_run: RunFactory,
) -> None:
    run_dir = make_run("bare", with_plan=False, concs=())
    result = make_result(conc=32, prefill_gpus=2, decode_gpus=6)
    del result["conc"], result["max_concurrency"]
    _write(run_dir, "bare_conc32_gpus_8_ctx_2_gen_6.json", result)

    run = load_run(run_dir)

    assert run.selector is None and run.variant == "bare" and run.config is None
    [point] = run.points
    assert point.conc == 32
    assert (point.prefill_gpus, point.decode_gpus) == (2, 6)


def test_gpu_counts_fall_back_to_the_plan(make_run: RunFactory) -> None:
    run_dir = make_run("r1", concs=(), prefill_gpus=4, decode_gpus=12)
    result = make_result(conc=16)
    del result["num_prefill_gpu"], result["num_decode_gpu"]
    _write(run_dir, "r1_conc16.json", result)

    [point] = load_run(run_dir).points

    assert (point.prefill_gpus, point.decode_gpus) == (4, 12)


def test_a_simulated_plan_marks_its_points_simulated(make_run: RunFactory) -> None:
    run = load_run(make_run("sim", simulated=True))
    assert run.simulated
    assert all(p.simulated for p in run.points)


def test_broken_plan_json_is_a_usage_error_with_its_position(make_run: RunFactory) -> None:
    run_dir = make_run("r1")
    (run_dir / "plan.json").write_text('{\n  "name": "x",\n  oops\n}')

    with pytest.raises(DisaggError) as caught:
        load_run(run_dir)

    assert caught.value.exit_code == EXIT_USAGE
    assert f"{run_dir / 'plan.json'}:3:3" in str(caught.value)


def test_a_plan_of_another_shape_is_a_usage_error_naming_the_field(make_run: RunFactory) -> None:
    run_dir = make_run("r1")
    data = json.loads((run_dir / "plan.json").read_text())
    data["prefill_gpus"] = "eight"
    (run_dir / "plan.json").write_text(json.dumps(data))

    with pytest.raises(DisaggError, match="prefill_gpus"):
        load_run(run_dir)


def test_labels_tell_apart_runs_of_the_same_variant(make_run: RunFactory) -> None:
    before = make_run("before")
    after = make_run("after")
    other = make_run("other", selector="recipes/h200/dsr1-1k1k.yaml:override_tp8")

    labels = [run.label for run in load_runs([before, after, other])]

    assert labels == [
        "dsr1-1k1k.yaml:override_dep8 · before",
        "dsr1-1k1k.yaml:override_dep8 · after",
        "dsr1-1k1k.yaml:override_tp8",
    ]


def test_iter_valid_results_yields_only_valid_points(make_run: RunFactory) -> None:
    run_dir = make_run("r1", invalid=(1, 256))
    assert [p.conc for p in iter_valid_results(run_dir)] == [4, 16, 64]


def test_request_rate_points_keep_their_rate_and_key(make_run: RunFactory) -> None:
    run_dir = make_run("r1", concs=())
    for rate in (2.0, 8.0):
        result = make_result(conc=16) | {
            "conc": None,
            "max_concurrency": None,
            "request_rate": rate,
            "point": f"rate{rate:g}",
        }
        _write(run_dir, f"r1_rate{rate:g}_concinf_gpus_16_ctx_8_gen_8.json", result)

    points = load_run(run_dir).points

    assert [(p.request_rate, p.conc, p.key) for p in points] == [
        (2.0, None, "rate2"),
        (8.0, None, "rate8"),
    ]
