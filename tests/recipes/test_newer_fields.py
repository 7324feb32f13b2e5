"""Fields InferenceX's recipes use that srt-slurm v1.0.68 does not define (srtctl rejects
them as unknown fields): each is read as it is meant, or refused by name with the reason;
none is a bare "unknown key"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError, UnsupportedRecipe
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL

Write = Callable[..., Path]

CUSTOM = """\
name: agentic
model: {path: hf:org/tiny, container: vllm, precision: fp4}
resources:
  gpu_type: gb200
  gpus_per_node: 4
  prefill_nodes: 1
  prefill_workers: 1
  decode_nodes: 1
  decode_workers: 1
frontend: {type: dynamo, enable_multiple_frontends: false}
dynamo: {install: false}
backend:
  type: vllm
  prefill_environment: {PREFILL_ENV}
  vllm_config:
    prefill: {tensor-parallel-size: 4}
    decode: {tensor-parallel-size: 4}
benchmark:
  type: custom
  command: bash agentic.sh
@METRICS@"""


def _plan(write: Write, text: str) -> Plan:
    [variant] = load_variants(write(text))
    return place(variant)


def _bench_env(plan: Plan) -> dict[str, str]:
    return plan.role("bench").env


def test_aiperf_server_metrics_hands_a_custom_command_the_workers_metrics_urls(
    write: Write,
) -> None:
    """srtctl v1.0.68 gives a custom command `AIPERF_SERVER_METRICS_URLS`: each logical
    worker's leader, on its Dynamo system port under Dynamo, then a prefill leader's KVBM
    metrics port (`_get_aiperf_server_metrics_env(..., logical_workers_only=True)`,
    cli/mixins/benchmark_stage.py); `aiperf_server_metrics: true` asks for it."""
    text = CUSTOM.replace("{PREFILL_ENV}", "{}")
    plan = _plan(write, text.replace("@METRICS@", "  aiperf_server_metrics: true\n"))
    urls = _bench_env(plan)["AIPERF_SERVER_METRICS_URLS"].split(",")
    assert urls == [
        "http://${prefill-0.host}:${prefill-0.system_port}/metrics",
        "http://${decode-0.host}:${decode-0.system_port}/metrics",
    ]
    # under Dynamo a worker's /metrics is on its system port (DYN_SYSTEM_PORT)
    assert plan.role("prefill-0").env["DYN_SYSTEM_PORT"] == "${self.system_port}"
    assert not [i for i in plan.ignored if "aiperf" in i["field"]]
    kvbm = CUSTOM.replace("{PREFILL_ENV}", "{DYN_KVBM_METRICS_PORT: '6880'}")
    plan = _plan(write, kvbm.replace("@METRICS@", "  aiperf_server_metrics: true\n"))
    urls = _bench_env(plan)["AIPERF_SERVER_METRICS_URLS"].split(",")
    assert urls[-1] == "http://${prefill-0.host}:6880/metrics" and len(urls) == 3
    unset = _plan(write, CUSTOM.replace("{PREFILL_ENV}", "{}").replace("@METRICS@", ""))
    assert "AIPERF_SERVER_METRICS_URLS" not in _bench_env(unset)


def test_aiperf_server_metrics_on_disaggs_own_load_generator_is_refused_by_name(
    write: Write,
) -> None:
    text = MINIMAL.replace(
        "  type: sa-bench\n", "  type: sa-bench\n  aiperf_server_metrics: true\n"
    )
    with pytest.raises(UnsupportedRecipe, match=r"benchmark\.aiperf_server_metrics"):
        _plan(write, text)


def test_telemetry_provider_is_read_and_telemetry_listed_as_not_collected(write: Write) -> None:
    """InferenceX names srt-slurm's DCGM power collector (`dcgm-power`); disagg collects
    no power telemetry and says so in the plan."""
    text = MINIMAL + "telemetry:\n  enabled: true\n  provider: dcgm-power\n  required: true\n"
    plan = _plan(write, text)
    assert [i["field"] for i in plan.ignored] == ["telemetry.enabled"]
    with pytest.raises(DisaggError, match=r"telemetry\.provider") as caught:
        _plan(write, text.replace("dcgm-power", "nvml"))
    assert "unknown key" not in str(caught.value)


def test_tokenizer_mode_of_srt_slurms_client_is_listed_as_ignored_for_sa_bench(
    write: Write,
) -> None:
    """InferenceX's sa-bench recipes set how srt-slurm's client loads its tokenizer
    (`tokenizer_mode` of its benchmark_serving.py); disagg's load generator has none."""
    text = MINIMAL.replace(
        "  type: sa-bench\n", "  type: sa-bench\n  tokenizer_mode: deepseek_v4\n"
    )
    plan = _plan(write, text)
    [why] = [i["why"] for i in plan.ignored if i["field"] == "benchmark.tokenizer_mode"]
    assert "tokenizer modes" in why and "usage" in why
