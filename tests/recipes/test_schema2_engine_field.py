"""`engine:` in a schema-2 recipe: only the named engine's model is made, and a bad value
is worded exactly as pydantic words the tagged union of every engine's model."""

from __future__ import annotations

from pathlib import Path

import pytest

from .recipe_helpers import after_loading, invoke
from .test_schema2 import SCHEMA2

EXPECTED = "expected 'atom', 'sglang', 'tilert', 'trtllm', 'vllm' or 'mocker' or "


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        (
            "{type: foo}",
            EXPECTED + "input tag 'foo' found using 'type' does not match any of the expected "
            "tags: 'atom', 'sglang', 'tilert', 'trtllm', 'vllm', 'mocker', got a map",
        ),
        ("{tp: 3}", EXPECTED + "unable to extract tag using discriminator 'type', got a map"),
        ("5", EXPECTED + "a valid dictionary or object to extract fields from, got an int (5)"),
        ("{type: vllm, connector: 5}", "`engine.connector`: input should be a valid string"),
    ],
)
def test_a_bad_engine_value_is_one_located_error(tmp_path: Path, engine: str, message: str) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(SCHEMA2.replace("engine: sglang\n", f"engine: {engine}\n"))
    code, _, err = invoke("plan", str(path))
    assert code == 2
    line = SCHEMA2.splitlines().index("engine: sglang") + 1
    assert f"{path}:{line}:" in err and message in err


def _engine_models_made(recipe: Path) -> int:
    made: int = after_loading(
        recipe,
        "from disagg.recipe.dialects.schema2_model import engine_model",
        "engine_model.cache_info().currsize",
    )
    return made


def test_only_the_named_engines_model_is_made(tmp_path: Path) -> None:
    bare = tmp_path / "bare.yaml"
    bare.write_text(SCHEMA2)
    assert _engine_models_made(bare) == 0  # `engine: sglang`: a name, no model needed
    knobs = tmp_path / "knobs.yaml"
    knobs.write_text(SCHEMA2.replace("engine: sglang\n", "engine: {type: sglang}\n"))
    assert _engine_models_made(knobs) == 1
