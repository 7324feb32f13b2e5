"""Trace replay (`mooncake-router` / `trace-replay`): a Mooncake-format trace is read
strictly, its shared prefixes become shared prompt text, and a run sends each request at
its timestamp through the live router."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from disagg.bench.prompts import PromptFactory, PromptSettings
from disagg.errors import DisaggError
from disagg.launch.state import PointStatus, RunStatus, RunSummary
from disagg.plan.model import Plan
from disagg.workloads.trace import build_requests, read_trace, trace_offsets

from .workload_support import disagg, one_measured_point

DATA = Path(__file__).parent / "data"
TRACE = DATA / "mini-trace.jsonl"
RECIPE = DATA / "sim-trace.yaml"
# a mocker recipe replaying a trace on the cluster filesystem, mounted into the job
CLUSTER_TRACE = (
    Path(__file__).resolve().parents[1] / "engines" / "data" / "mocker" / "trace-agg.yaml"
)


def test_shipped_trace_reads_with_its_timestamps_in_seconds() -> None:
    records = read_trace(TRACE)
    assert len(records) == 12
    offsets = trace_offsets(records)
    assert offsets[0] == 0.0 and offsets[1] == pytest.approx(0.05)
    assert offsets[-1] == pytest.approx(1.1)
    assert trace_offsets(records, speedup=2.0)[-1] == pytest.approx(0.55)


def test_requests_sharing_hash_ids_share_their_prompt_prefix() -> None:
    factory = PromptFactory(PromptSettings(model="m", isl=1, osl=1, prompt_format="text"))
    records = read_trace(TRACE)
    specs = build_requests(factory, records, block_tokens=16)
    prompts = [json.loads(spec.body)["prompt"] for spec in specs]
    words = [prompt.split(" ") for prompt in prompts]
    assert [len(w) for w in words] == [r.input_length for r in records]
    # 0 and 1 start with blocks 0, 1; 6 starts with 10, 11: 32 words shared, or not.
    assert words[0][:32] == words[1][:32] and words[0][32:40] != words[1][32:40]
    assert words[0][:16] != words[6][:16]
    assert [json.loads(s.body)["max_tokens"] for s in specs] == [r.output_length for r in records]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"timestamp": -1, "input_length": 4, "output_length": 2}', "timestamp must be"),
        ('{"timestamp": 0, "input_length": 0, "output_length": 2}', "input_length must be"),
        ('{"timestamp": 0, "input_length": 4, "output_length": 2, "hash_ids": ["a"]}', "hash_ids"),
        ("not json", "not a JSON object"),
    ],
)
def test_a_bad_trace_line_is_named_with_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 0, "input_length": 4, "output_length": 2}\n' + line + "\n")
    with pytest.raises(DisaggError) as caught:
        read_trace(path)
    assert caught.value.location is not None
    assert (caught.value.location.file, caught.value.location.line) == (str(path), 2)
    assert message in caught.value.message


def test_plan_refuses_a_missing_trace_with_exit_2(tmp_path: Path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE.read_text().replace("mini-trace.jsonl", "absent.jsonl"))
    done = disagg("plan", recipe)
    assert done.returncode == 2
    assert "absent.jsonl" in done.stderr and "Traceback" not in done.stderr


def _recipe_reading_the_trace_inside(tmp_path: Path, mount: str) -> Path:
    """The shipped trace recipe with its trace named at /traces, inside a container mount."""
    recipe = tmp_path / "r.yaml"
    text = RECIPE.read_text().replace("mini-trace.jsonl", "/traces/mini-trace.jsonl")
    recipe.write_text(text + f'extra_mount:\n  - "{mount}"\n')
    return recipe


@pytest.mark.parametrize("options", ["", ":ro"])
def test_plan_reads_a_trace_named_inside_a_mount_from_its_host_side(
    tmp_path: Path, options: str
) -> None:
    host = tmp_path / "traces"
    host.mkdir()
    (host / "mini-trace.jsonl").write_text(TRACE.read_text())
    recipe = _recipe_reading_the_trace_inside(tmp_path, f"{host}:/traces{options}")
    done = disagg("plan", recipe, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    [variant] = json.loads(done.stdout)["variants"]
    assert variant["bench"]["trace"]["path"] == str(host / "mini-trace.jsonl")
    assert variant["bench"]["points"][0]["num_prompts"] == len(read_trace(TRACE))


def _planned(recipe: Path) -> dict[str, Any]:
    done = disagg("plan", recipe, "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    [variant] = json.loads(done.stdout)["variants"]
    return cast(dict[str, Any], variant)


def test_a_trace_whose_mount_has_no_host_side_here_is_left_to_the_job(tmp_path: Path) -> None:
    """As srtctl: the trace on the cluster is not read when planning; the plan says so."""
    host = tmp_path / "absent"
    recipe = _recipe_reading_the_trace_inside(tmp_path, f"{host}:/traces")
    variant = _planned(recipe)
    trace = variant["bench"]["trace"]
    assert trace == {
        "path": str(host / "mini-trace.jsonl"),
        "written": "/traces/mini-trace.jsonl",
        "at_run_time": True,
        "block_tokens": 512,
        "speedup": 1.0,
    }
    assert [p["num_prompts"] for p in variant["bench"]["points"]] == [0]
    assert "trace-file" in [row["id"] for row in variant["differs"]]
    shown = " ".join(disagg("plan", recipe).stdout.split())
    assert "/traces/mini-trace.jsonl (on the cluster at" in shown
    assert "read and checked by the job before load starts" in shown
    assert "come from the trace at run time" in shown


def test_a_trace_under_a_host_side_that_is_here_is_still_read_when_planning(
    tmp_path: Path,
) -> None:
    (tmp_path / "traces").mkdir()
    recipe = _recipe_reading_the_trace_inside(tmp_path, f"{tmp_path / 'traces'}:/traces")
    done = disagg("plan", recipe)
    assert done.returncode == 2
    assert str(tmp_path / "traces" / "mini-trace.jsonl") in done.stderr


def test_a_trace_recipe_on_a_cluster_filesystem_plans() -> None:
    variant = _planned(CLUSTER_TRACE)
    trace = variant["bench"]["trace"]
    assert trace["at_run_time"] is True
    assert trace["written"] == "/traces/chat-sessions/dataset.jsonl"
    assert trace["path"].startswith("/lustre/") and trace["path"].endswith("/dataset.jsonl")
    assert [p["label"] for p in variant["bench"]["points"]] == ["trace_conc4"]


def _job_for_a_trace_written_later(tmp_path: Path) -> tuple[Path, Path]:
    """A run directory planned while the trace's mount had no host side on this machine;
    returns it and where the job will read the trace."""
    host = tmp_path / "cluster-fs"
    variant = _planned(_recipe_reading_the_trace_inside(tmp_path, f"{host}:/traces"))
    assert variant["bench"]["trace"]["at_run_time"] is True
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    Plan.model_validate(variant).write(run_dir)
    host.mkdir()  # the cluster's filesystem, there by the time the job runs
    return run_dir, host / "mini-trace.jsonl"


def _job(run_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "disagg.job", str(run_dir), "--executor", "local"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (None, "No such file"),
        ('{"timestamp": 0, "input_length": 4, "output_length": 2}\nnot json\n', ":2"),
    ],
)
def test_a_trace_missing_or_malformed_when_the_job_runs_fails_it_by_name(
    tmp_path: Path, content: str | None, named: str
) -> None:
    run_dir, trace = _job_for_a_trace_written_later(tmp_path)
    if content is not None:
        trace.write_text(content)
    done = _job(run_dir)
    assert done.returncode != 0
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    assert summary.reason is not None
    assert str(trace) in summary.reason and named in summary.reason, summary.reason
    # Checked before any role started: the orchestrator's is the only log.
    assert [p.name for p in (run_dir / "logs").iterdir()] == ["orchestrator.log"]
    assert "/traces/mini-trace.jsonl" in (summary.reason + done.stdout + done.stderr)


@pytest.mark.slow
def test_a_trace_that_exists_only_when_the_job_runs_is_read_and_replayed(
    tmp_path: Path,
) -> None:
    run_dir, trace = _job_for_a_trace_written_later(tmp_path)
    trace.write_text(TRACE.read_text())
    done = _job(run_dir)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.COMPLETED
    [point] = summary.points
    assert (point.key, point.status) == ("trace", PointStatus.MEASURED)
    assert point.result is not None
    result = json.loads(Path(point.result).read_text())
    records = read_trace(TRACE)
    assert result["valid"] is True
    assert result["num_prompts"] == result["completed"] == len(records)


@pytest.mark.slow
def test_trace_replay_run_sends_each_request_at_its_timestamp(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    done = disagg("run", RECIPE, "--local", "--out", run_dir)
    assert done.returncode == 0, done.stderr[-3000:]
    result_path = one_measured_point(run_dir, "trace")
    result = json.loads(Path(result_path).read_text())
    assert result["valid"] is True and result["completed"] == 12
    sent = [
        json.loads(line)
        for line in Path(result_path).with_suffix(".jsonl").read_text().splitlines()
    ]
    offsets = trace_offsets(read_trace(TRACE))
    by_index = sorted(sent, key=lambda r: r["index"])
    # Never early: each request left at or after its own timestamp, in trace order.
    assert all(r["send_ms"] >= 1000 * o - 1.0 for r, o in zip(by_index, offsets, strict=True))
    sends = [r["send_ms"] for r in by_index]
    assert sends == sorted(sends)
    assert [r["output_len"] for r in by_index] == [r.output_length for r in read_trace(TRACE)]
