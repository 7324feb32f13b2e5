"""Result files: field names and file names from DESIGN.md, the validity gate, resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.bench.results import PointContext, existing_valid_result, result_stem
from disagg.plan.model import PointPlan
from stream_server import ServerConfig, serve_in_subprocess

from .support import measure, plan

VLLM_FIELDS = {
    "date", "backend", "model_id", "tokenizer_id", "num_prompts", "request_rate",
    "burstiness", "max_concurrency", "duration", "completed", "failed",
    "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
    "output_throughput", "total_token_throughput",
}  # fmt: skip
DETAILED_FIELDS = {"input_lens", "output_lens", "ttfts", "itls", "errors"}  # --save-detailed
INFERENCEX_FIELDS = {
    "tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu", "conc", "isl", "osl",
    "num_prefill_gpu", "num_decode_gpu", "disagg",
}  # fmt: skip
DISAGG_FIELDS = {"valid", "invalid_reason", "simulated", "point", "run_name"}


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    out = tmp_path_factory.mktemp("good")
    with serve_in_subprocess(ServerConfig(ttft_ms=4, itl_ms=2)) as url:
        run = measure(url, plan(concurrency=4, num_prompts=12, slo={"ttft": 1000.0}), out)
    return run.path, json.loads(run.path.read_text())


def test_fields_follow_vllm_inferencex_and_disagg_names(
    good: tuple[Path, dict[str, object]],
) -> None:
    path, r = good
    missing = (VLLM_FIELDS | INFERENCEX_FIELDS | DISAGG_FIELDS) - set(r)
    assert not missing
    # as in vLLM without --save-detailed: per-request lists live in the .jsonl only
    assert not DETAILED_FIELDS & set(r)
    lines = path.with_suffix(".jsonl").read_text().splitlines()
    assert len(lines) == 12 and all(json.loads(line)["itls_ms"] for line in lines)
    for metric in ("ttft", "tpot", "itl", "e2el"):
        for stat in ("mean", "median", "std", "p90", "p95", "p99"):
            assert isinstance(r[f"{stat}_{metric}_ms"], float)
    for stat in ("mean", "median", "p90", "p95", "p99"):
        assert r[f"{stat}_intvty"] == pytest.approx(1000.0 / r[f"{stat}_tpot_ms"])  # type: ignore[operator]
    assert "median_client_queue_ms" in r and "p99_client_queue_ms" in r


def test_throughputs_and_per_gpu_fields_are_consistent(
    good: tuple[Path, dict[str, object]],
) -> None:
    _, r = good
    assert r["completed"] == 12 and r["total_input_tokens"] == 12 * 32
    assert r["total_output_tokens"] == 12 * 16
    duration = float(r["duration"])  # type: ignore[arg-type]
    assert r["output_throughput"] == pytest.approx(12 * 16 / duration)
    assert r["total_token_throughput"] == pytest.approx(12 * 48 / duration)
    # 1 prefill GPU + 2 decode GPUs, disaggregated
    assert r["tput_per_gpu"] == pytest.approx(float(r["total_token_throughput"]) / 3)  # type: ignore[arg-type]
    assert r["output_tput_per_gpu"] == pytest.approx(float(r["output_throughput"]) / 2)  # type: ignore[arg-type]
    assert r["input_tput_per_gpu"] == pytest.approx(12 * 32 / duration / 1)
    assert r["request_goodput"] == pytest.approx(r["request_throughput"])  # generous SLO: all good


def test_file_name_and_jsonl_records(good: tuple[Path, dict[str, object]]) -> None:
    path, _ = good
    assert path.name == "t_conc4_gpus_3_ctx_1_gen_2.json"
    rows = [json.loads(line) for line in path.with_suffix(".jsonl").read_text().splitlines()]
    assert len(rows) == 12 and all(row["success"] for row in rows)
    assert rows[0]["output_len_source"] == "usage" and len(rows[0]["itls_ms"]) == 15


@pytest.mark.parametrize(
    ("point", "gpus", "disagg", "name"),
    [
        (PointPlan(concurrency=64, num_prompts=1), (4, 8), True, "r_conc64_gpus_12_ctx_4_gen_8"),
        (PointPlan(concurrency=8, num_prompts=1), (0, 8), False, "r_conc8_gpus_8_agg"),
        (PointPlan(request_rate=2.5, num_prompts=1), (0, 0), False, "r_rate2.5_concinf"),
        (
            PointPlan(request_rate=4, concurrency=16, num_prompts=1),
            (2, 2),
            True,
            "r_rate4_conc16_gpus_4_ctx_2_gen_2",
        ),
    ],
)
def test_result_stems(point: PointPlan, gpus: tuple[int, int], disagg: bool, name: str) -> None:
    ctx = PointContext("r", point, gpus[0], gpus[1], disagg, simulated=False)
    assert result_stem(ctx) == name


def test_invalid_point_is_written_but_never_resumed(out: Path) -> None:
    bench = plan(concurrency=4, num_prompts=8)
    point = bench.points[0]
    with serve_in_subprocess(ServerConfig(fail_status=500)) as url:
        bad = measure(url, bench, out)
    data = json.loads(bad.path.read_text())
    assert data["valid"] is False and data["invalid_reason"]
    assert data["error_counts"] and all(e.startswith("HTTP 500") for e in data["error_counts"])
    assert sum(data["error_counts"].values()) == 8
    assert existing_valid_result(out, point) is None
    with serve_in_subprocess(ServerConfig()) as url:
        good = measure(url, bench, out)
    assert good.path == bad.path  # the re-run replaces the invalid file
    assert existing_valid_result(out, point) == good.path
    # a different prompt count or point is not the same measurement
    assert existing_valid_result(out, PointPlan(concurrency=4, num_prompts=9)) is None
    assert existing_valid_result(out, PointPlan(concurrency=8, num_prompts=8)) is None


def test_save_detailed_keeps_per_request_lists(tmp_path: Path) -> None:
    with serve_in_subprocess(ServerConfig(ttft_ms=2, itl_ms=1)) as url:
        run = measure(url, plan(concurrency=2, num_prompts=4), tmp_path, detailed=True)
    data = json.loads(run.path.read_text())
    assert set(data) >= DETAILED_FIELDS
    assert len(data["itls"]) == 4 and data["errors"] == [""] * 4
