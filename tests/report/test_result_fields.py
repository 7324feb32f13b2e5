"""Result files carry InferenceX's setup fields; `collect` writes InferenceX rows, marking
simulated ones only when asked.

The end-to-end test runs a real simulated sweep (`disagg run --local`) whose decode
worker uses attention-DP, expert parallelism and speculative decoding, then checks
every result file and every collected row against InferenceX's field list.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.bench.identity import SETUP_FIELDS, spec_decoding, worker_parallelism
from disagg.bench.inferencex import InferenceXRow, ResultSetup, schema_problems, to_row
from disagg.errors import DisaggError

from .report_fixtures import RunFactory
from .test_report_e2e import _disagg

RECIPE = Path(__file__).parent / "data" / "sim-fields.yaml"


def test_worker_parallelism_reads_every_engine_spelling() -> None:
    sglang = worker_parallelism(["--tp-size", "8", "--dp-size", "8", "--enable-dp-attention"])
    assert (sglang.tp, sglang.dp, sglang.ep, sglang.dp_attention) == (8, 8, 1, True)
    vllm = worker_parallelism(
        ["--tensor-parallel-size=4", "--data-parallel-size", "2", "--enable-expert-parallel"]
    )
    assert (vllm.tp, vllm.dp, vllm.ep, vllm.dp_attention) == (4, 2, 8, False)
    assert worker_parallelism([]).tp == 1


def test_spec_decoding_names_the_algorithm_or_none() -> None:
    assert spec_decoding(["--speculative-algorithm", "EAGLE"]) == "eagle"
    assert spec_decoding(["--speculative-config", '{"method": "MTP", "k": 2}']) == "mtp"
    assert spec_decoding(["--tp-size", "2"]) == "none"


def test_a_result_without_setup_fields_is_not_collected() -> None:
    with pytest.raises(DisaggError, match="not an InferenceX-complete result"):
        to_row({"point": "conc1", "valid": True, "hw": None})


@pytest.mark.slow
def test_results_and_collected_rows_carry_the_inferencex_fields(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    run = _disagg(["run", str(RECIPE), "--local", "--out", str(runs)], tmp_path, 240)
    assert run.returncode == 0, run.stdout + run.stderr
    results = sorted(runs.glob("results/*.json"))
    assert [json.loads(p.read_text())["conc"] for p in results] == [1, 4]

    for path in results:
        data = json.loads(path.read_text())
        assert schema_problems(ResultSetup, data) == [], path
        assert set(SETUP_FIELDS) <= data.keys()
        assert data["hw"] == "sim" and data["framework"] == "sglang" and data["engine"] == "sim"
        assert data["precision"] == "fp8"
        assert data["spec_decoding"] == "eagle"
        assert (data["prefill_tp"], data["prefill_dp_attention"]) == (1, False)
        assert (data["decode_tp"], data["decode_ep"], data["decode_dp_attention"]) == (2, 2, True)
        assert (data["prefill_num_workers"], data["decode_num_workers"]) == (1, 1)
        assert data["router"] == "smg" and data["router_version"]  # the default router
        assert data["recipe_fingerprint"].startswith("sha256:")

    out = tmp_path / "collected"
    refused = _disagg(["collect", str(runs), "--out", str(out)], tmp_path, 60)
    assert refused.returncode == 2
    assert "simulated" in refused.stderr and "--allow-simulated" in refused.stderr
    assert not out.exists() or not any(out.iterdir())

    collected = _disagg(
        ["collect", str(runs), "--out", str(out), "--allow-simulated", "--json"], tmp_path, 60
    )
    assert collected.returncode == 0, collected.stderr
    rows = sorted(out.glob("agg_*.json"))
    assert [p.name for p in rows] == [f"agg_{p.name}" for p in results]
    for path in rows:
        row = json.loads(path.read_text())
        assert schema_problems(InferenceXRow, row) == [], path
        assert row["hw"] == "sim-simulated" and row["simulated"] is True
        assert row["is_multinode"] is True and row["decode_dp_attention"] is True
        # Latencies in seconds under InferenceX's names, interactivity from TPOT.
        source = json.loads((out / path.name.removeprefix("agg_")).read_text())
        assert row["median_ttft"] == pytest.approx(source["median_ttft_ms"] / 1000)
        assert row["median_intvty"] == pytest.approx(1000 / source["median_tpot_ms"])

    old = _disagg(["collect", str(runs), "--into", str(out), "--allow-simulated"], tmp_path, 60)
    assert old.returncode == 0 and "deprecated" in old.stderr


def test_collect_takes_the_setup_of_results_that_name_none_from_the_plan(
    make_run: RunFactory, tmp_path: Path
) -> None:
    """Custom benchmarks (and `disagg bench`) write results without setup fields."""
    from typer.testing import CliRunner

    from disagg.cli import _register, app

    run_dir = make_run("custom", gpu_type="mi355x", framework="vllm", concs=(1, 4))
    first = next((run_dir / "results").glob("*.json"))
    assert "hw" not in json.loads(first.read_text())
    # one output token per request: no TPOT, so no interactivity (null, not a failure)
    single = json.loads(first.read_text()) | {"median_tpot_ms": 0.0, "median_intvty": None}
    first.write_text(json.dumps(single))
    _register()
    out = tmp_path / "rows"
    done = CliRunner().invoke(app, ["collect", str(run_dir), "-o", str(out), "--json"])
    assert done.exit_code == 0, done.output
    assert [entry["point"] for entry in json.loads(done.output)] == ["conc1", "conc4"]

    rows = [json.loads(p.read_text()) for p in sorted(out.glob("agg_*.json"))]
    assert len(rows) == 2
    for row in rows:
        assert schema_problems(InferenceXRow, row) == []
        assert (row["hw"], row["framework"], row["precision"]) == ("mi355x", "vllm", "fp8")
        assert (row["decode_tp"], row["decode_dp_attention"]) == (8, True)
        assert row["simulated"] is False
    assert sorted(row["median_intvty"] is None for row in rows) == [False, True]
