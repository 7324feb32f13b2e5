"""Schema 2's engine knobs are typed per engine: each engine map takes its own engine's knobs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.errors import DisaggError
from disagg.recipe.variants import load_variants

from .test_schema2 import SCHEMA2

Write = Callable[..., Path]


def _engine(block: str) -> str:
    return SCHEMA2.replace("engine: sglang\n", block)


def _error(write: Write, text: str) -> DisaggError:
    with pytest.raises(DisaggError) as caught:
        load_variants(write(text))
    return caught.value


def test_a_vllm_knob_on_an_sglang_engine_names_both_engines(write: Write) -> None:
    text = _engine("engine:\n  type: sglang\n  dp_launch_mode: per_gpu\n")
    error = _error(write, text)
    assert error.message == "`engine.dp_launch_mode` is a knob of vllm, not of engine sglang"
    assert error.location is not None and (error.location.line, error.location.column) == (12, 3)
    assert error.hint == "engine sglang takes: gpu_type"


def test_a_typo_in_an_engine_knob_gets_a_did_you_mean_from_that_engine(write: Write) -> None:
    error = _error(write, _engine("engine:\n  type: trtllm\n  numa_cpu_bnd: true\n"))
    assert error.message == "unknown key `engine.numa_cpu_bnd` for engine trtllm"
    assert error.hint is not None and error.hint.startswith("did you mean `numa_cpu_bind`?")


def test_a_v1_per_role_key_in_an_engine_map_names_its_schema2_place(write: Write) -> None:
    error = _error(write, _engine("engine:\n  type: sglang\n  prefill_environment: {A: '1'}\n"))
    assert "`engine.prefill_environment` is not an engine knob" in error.message
    assert "`roles.prefill.env`" in error.message


def test_a_role_engine_is_checked_against_its_own_type(write: Write) -> None:
    text = SCHEMA2.replace("engine: sglang\n", "").replace(
        "  prefill:\n    nodes: 1\n",
        "  prefill:\n    engine: {type: vllm, gpu_type: h100}\n    nodes: 1\n",
    )
    error = _error(write, text)
    assert (
        error.message == "`roles.prefill.engine.gpu_type` is a knob of sglang, not of engine vllm"
    )


def test_a_knob_value_is_typed_as_its_engine_defines_it(write: Write) -> None:
    error = _error(write, _engine("engine:\n  type: vllm\n  dp_launch_mode: per_rack\n"))
    assert error.message.startswith("`engine.dp_launch_mode`: input should be 'per_gpu' or")
    assert error.location is not None and error.location.line == 12


@pytest.mark.parametrize(
    ("block", "field", "value"),
    [
        ("engine:\n  type: vllm\n  connector: nixl\n", "connector", "nixl"),
        ("engine:\n  type: trtllm\n  publish_metrics: false\n", "publish_metrics", False),
        ("engine:\n  type: sglang\n  gpu_type: gb200\n", "gpu_type", "gb200"),
    ],
)
def test_each_engine_keeps_its_own_knobs(
    write: Write, block: str, field: str, value: object
) -> None:
    [variant] = load_variants(write(_engine(block)))
    assert getattr(variant.config.backend, field) == value
