"""`mooncake-router` with a named `mooncake_workload`: srtctl's AIPerf replay rendered from the
recipe's fields; where AIPerf is not installed a local run ends at once, saying so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.launch.state import RunStatus, RunSummary
from disagg.plan.model import RoleKind
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .workload_support import disagg

SIM = Path(__file__).parent / "data" / "sim-custom.yaml"
RECIPE = Path(__file__).parent / "data" / "mooncake-router.yaml"


def test_the_named_workload_renders_srtctls_aiperf_arguments() -> None:
    plan = place(load_variants(RECIPE)[0])
    role = next(r for r in plan.roles if r.kind is RoleKind.BENCH)
    assert role.argv[:2] == ["bash", "-c"]
    script = role.argv[2]
    assert "--custom-dataset-type mooncake_trace --fixed-schedule" in script
    assert "--concurrency 10 --request-count 20" in script  # srtctl's warm-up
    url = f"${{{plan.serving_role}.url}}"
    # endpoint, served model, workload, TTFT and ITL thresholds, tokenizer: as srtctl passes them
    assert role.argv[3:] == [
        *("mooncake-router", url, plan.bench.model_name, "conversation", "1500", "30"),
        "${model.path}",
    ]
    assert role.env["AIPERF_HTTP_SO_RCVTIMEO"] == "120"
    assert plan.bench.command is not None and plan.bench.command.expects_results is False
    assert "mooncake-router" in [row["id"] for row in plan.differs]


def test_an_unknown_workload_is_a_positioned_error(tmp_path: Path) -> None:
    text = RECIPE.read_text()
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        text.replace('mooncake_workload: "conversation"', 'mooncake_workload: "chat"')
    )
    with pytest.raises(DisaggError, match="mooncake_workload must be one of") as caught:
        place(load_variants(recipe)[0])
    assert caught.value.location is not None


@pytest.mark.slow
def test_a_local_run_without_aiperf_fails_at_once_saying_so(tmp_path: Path) -> None:
    if shutil.which("aiperf"):
        pytest.skip("aiperf is installed here: the run would fetch the trace and measure")
    head, _, _ = SIM.read_text().partition("  benchmark:\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        head + "  benchmark:\n    type: mooncake-router\n    mooncake_workload: toolagent\n"
    )
    run_dir = tmp_path / "run"
    done = disagg("run", f"{recipe}:base", "--local", "--out", run_dir)
    assert done.returncode != 0
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    assert summary.reason is not None and "exited with code 3" in summary.reason
    log = next((run_dir / "logs").glob("bench*")).read_text()
    assert "aiperf is not installed" in log and "Nothing was measured" in log
    assert not (run_dir / "bench-results" / "traces" / "toolagent_trace.jsonl").exists()
