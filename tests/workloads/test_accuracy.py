"""Accuracy benchmarks (`gsm8k`, `gpqa`) and `manual`: the harness call srtctl makes, rendered
from the recipe's fields; the score file judged as a typed result; a harness that is not
there ends a local run at once, saying so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.launch.state import PointStatus, RunStatus, RunSummary
from disagg.plan.model import Plan, RoleKind
from disagg.plan.placement import place
from disagg.recipe.benchmark_section import BenchmarkSection
from disagg.recipe.variants import load_variants
from disagg.workloads import BenchInputs, adapter_for
from disagg.workloads.accuracy import judge

from .workload_support import disagg

DATA = Path(__file__).parent / "data"  # recipes written for these tests
SIM = DATA / "sim-custom.yaml"


def bench_argv(plan: Plan) -> list[str]:
    role = next(r for r in plan.roles if r.kind is RoleKind.BENCH)
    return role.argv


def harness_tail(argv: list[str]) -> list[str]:
    """The harness call after the wrapper (`bash -c WRAPPER accuracy EVAL ...`)."""
    assert argv[:2] == ["bash", "-c"] and argv[3] == "accuracy"
    return argv[5:]


def test_gsm8k_renders_sglang_run_eval_with_the_recipes_fields() -> None:
    plan = place(load_variants(DATA / "accuracy-gsm8k.yaml")[0])
    url = f"${{{plan.serving_role}.url}}"
    assert harness_tail(bench_argv(plan)) == [
        *("python3", "-m", "sglang.test.run_eval", "--base-url", url),
        *("--eval-name", "gsm8k", "--num-examples", "400", "--max-tokens", "1024"),
        *("--num-threads", "64", "--num-shots", "8"),
    ]
    assert bench_argv(plan)[4] == "gsm8k"
    assert plan.bench.command is not None and plan.bench.command.accuracy == "gsm8k"
    assert "accuracy-result" in [row["id"] for row in plan.differs]


def test_gpqa_renders_its_harness_call_with_the_served_model_name() -> None:
    plan = place(load_variants(DATA / "accuracy-gpqa.yaml")[0])
    tail = harness_tail(bench_argv(plan))
    assert tail[5:7] == ["--model", plan.bench.model_name]
    assert tail[7:] == [
        *("--eval-name", "gpqa", "--num-examples", "198", "--max-tokens", "32768"),
        *("--repeat", "4", "--num-threads", "32"),
    ]


def inputs(engine: str, **fields: object) -> BenchInputs:
    def fail(message: str, where: tuple[str, ...], hint: str | None) -> DisaggError:
        return DisaggError(f"{'.'.join(where)}: {message}", hint=hint)

    return BenchInputs(
        section=BenchmarkSection.model_validate(fields),
        model_name="m",
        simulated=False,
        recipe_dir=Path("."),
        fail=fail,
        resolve_container=lambda written: written,
        engine=engine,
    )


def test_gsm8k_defaults_are_srtctls_and_sampling_flags_only_when_set() -> None:
    plan = adapter_for("gsm8k").plan(inputs("sglang", type="gsm8k", temperature=0.6, top_k=20))
    assert plan.command is not None
    tail = plan.command.argv[5:]
    assert tail[tail.index("--num-examples") + 1] == "1319"
    assert tail[tail.index("--max-tokens") + 1] == "16384"
    assert tail[tail.index("--num-threads") + 1] == "512"
    assert tail[tail.index("--num-shots") + 1] == "5"
    assert tail[-4:] == ["--temperature", "0.6", "--top-k", "20"]
    assert "--top-p" not in tail


def test_a_bad_count_is_a_positioned_error() -> None:
    with pytest.raises(DisaggError, match=r"benchmark\.num_examples must be > 0"):
        adapter_for("gpqa").plan(inputs("sglang", type="gpqa", num_examples=0))


def test_a_load_field_accuracy_does_not_read_is_refused() -> None:
    with pytest.raises(UnsupportedRecipe, match=r"benchmark\.isl"):
        adapter_for("gsm8k").plan(inputs("sglang", type="gsm8k", isl=128))


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"score": 0.91, "score:std": 0.2}', None),
        ('{"score": 1.3}', "not a number in 0..1"),
        ('{"score": "high"}', "not a number in 0..1"),
        ('{"accuracy": 0.9}', "has no `score`"),
        ("[0.9]", "not a JSON object"),
        ("not json", "not a JSON object"),
    ],
)
def test_score_file_is_judged(tmp_path: Path, content: str, reason: str | None) -> None:
    path = tmp_path / "gsm8k_m.json"
    path.write_text(content)
    result = judge("gsm8k", path, None)
    if reason is None:
        assert result.valid and result.score == 0.91 and result.metrics["score:std"] == 0.2
    else:
        assert not result.valid and result.reason is not None and reason in result.reason


def test_a_role_that_stopped_serving_makes_the_score_invalid(tmp_path: Path) -> None:
    path = tmp_path / "gpqa_m.json"
    path.write_text('{"score": 0.5}')
    result = judge("gpqa", path, "decode-0 did not serve for 9 s")
    assert not result.valid and result.reason == "decode-0 did not serve for 9 s"


def test_manual_keeps_the_servers_up_and_lists_load_fields_as_ignored() -> None:
    plan = place(load_variants(DATA / "manual-default.yaml")[0])
    assert plan.bench.type == "manual" and plan.bench.points == []
    assert plan.bench.command is not None and plan.bench.command.expects_results is False
    argv = bench_argv(plan)
    assert argv[:2] == ["bash", "-c"] and argv[2].endswith("exec sleep infinity")
    assert any(item["field"] == "benchmark.concurrencies" for item in plan.ignored)


@pytest.mark.slow
def test_a_local_gsm8k_run_without_the_harness_fails_at_once_saying_so(tmp_path: Path) -> None:
    try:
        import sglang.test.run_eval  # noqa: F401

        pytest.skip("SGLang's harness is installed here: the run would evaluate for real")
    except ImportError:
        pass
    recipe = tmp_path / "r.yaml"
    text = SIM.read_text().replace("    type: custom\n", "    type: gsm8k\n", 1)
    head, _, _ = text.partition("    isl: 64\n")
    recipe.write_text(head + "    num_examples: 4\n")
    run_dir = tmp_path / "run"
    done = disagg("run", f"{recipe}:base", "--local", "--out", run_dir)
    assert done.returncode != 0
    summary = RunSummary.read(run_dir)
    assert summary is not None and summary.status is RunStatus.FAILED
    assert summary.reason is not None and "exited with code 3" in summary.reason
    assert not [p for p in summary.points if p.status is PointStatus.MEASURED]
    log = next((run_dir / "logs").glob("bench*")).read_text()
    assert "is not importable" in log and "Nothing was evaluated" in log
    assert not (run_dir / "accuracy").exists()
    assert json.loads((run_dir / "plan.json").read_text())["bench"]["type"] == "gsm8k"
