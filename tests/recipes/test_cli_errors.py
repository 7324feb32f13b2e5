"""Bad input through the real `disagg plan` CLI: one located error, exit 2, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.plan.model import Plan

from .recipe_helpers import MINIMAL, disagg, invoke

ZIP_MISMATCH = MINIMAL.replace("name: tiny", "base:\n  name: tiny")
BAD_CASES: dict[str, tuple[str | bytes | None, str, str]] = {
    # name: (file content, expected message part, expected location suffix)
    "malformed": ("name: [tiny\nmodel: {}\n", "malformed YAML", ":2:"),
    "wrong_type": (MINIMAL.replace("isl: 1024", "isl: many"), "`benchmark.isl`", ":21:8"),
    "missing_field": (MINIMAL.replace("  precision: bf16\n", ""), "`model.precision`", ":2:1"),
    "unknown_key": (
        MINIMAL.replace("  gpu_type: h100", "  gpu_typ: h100"),
        "did you mean `gpu_type`",
        ":7:3",
    ),
    "empty": ("", "file is empty", "recipe.yaml"),
    "binary": (b"\x7fELF\x02\x01\x00\x00", "binary", ":1:7"),
    "directory": (None, "a directory", ""),
}


def _materialise(tmp_path: Path, content: str | bytes | None) -> Path:
    if content is None:
        return tmp_path
    path = tmp_path / "recipe.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_exits_2_with_one_located_error(tmp_path: Path, case: str) -> None:
    content, expected, where = BAD_CASES[case]
    path = _materialise(tmp_path, content)
    code, _, error = invoke("plan", str(path))
    assert code == 2, error
    assert expected in error
    assert where in error.splitlines()[0]


def test_the_installed_entry_point_prints_errors_without_traceback(tmp_path: Path) -> None:
    path = _materialise(tmp_path, "name: [tiny\n")
    done = disagg("plan", str(path))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {path}:2:1: malformed YAML")
    assert "Traceback" not in done.stderr


def test_zip_length_mismatch_names_leaves_and_lengths(write: Callable[..., Path]) -> None:
    path = write(
        MINIMAL.replace("name: tiny\n", "")
        .replace("\n", "\n  ")
        .replace("model:", "base:\n  name: tiny\n  model:", 1)
        + "\nzip_override_scale:\n  resources:\n    decode_nodes: [1, 2]\n"
        "    decode_workers: [1, 2, 3]\n"
    )
    code, _, error = invoke("plan", str(path))
    assert code == 2
    assert "decode_nodes has 2" in error and "decode_workers has 3" in error
    assert f"{path.name}:" in error.splitlines()[0]


def test_unknown_selector_lists_the_variants(write: Callable[..., Path]) -> None:
    path = write(MINIMAL)
    code, _, error = invoke("plan", f"{path}:override_nope")
    assert code == 2
    assert "no variant matches selector 'override_nope'" in error
    assert "available: base" in error


def test_unsupported_backend_is_one_line(write: Callable[..., Path]) -> None:
    path = write(MINIMAL.replace("backend:\n", "backend:\n  type: tilert\n"))
    code, _, error = invoke("plan", str(path))
    assert code == 2
    lines = [line for line in error.splitlines() if line.strip()]
    assert len(lines) == 1 and "unsupported: a TileRT prefill worker" in lines[0]


def test_unsupported_variants_are_listed_while_the_others_are_planned(
    write: Callable[..., Path],
) -> None:
    good = write(MINIMAL)
    bad = write(MINIMAL.replace("backend:\n", "backend:\n  type: tilert\n"), name="tilert.yaml")
    code, out, error = invoke("plan", str(good), str(bad), "--json")
    assert code == 1  # findings: something was set aside, the rest is usable
    payload = json.loads(out)
    assert [Plan.model_validate(v).name for v in payload["variants"]] == ["tiny"]
    [skipped] = payload["unsupported"]
    assert skipped["selector"].endswith("tilert.yaml:base")
    assert skipped["reason"].startswith("unsupported: a TileRT prefill worker")
    code, _, error = invoke("plan", str(good), str(bad))
    assert code == 1
    assert "unsupported: a TileRT prefill worker" in error
    assert "1 variant(s) planned, 1 unsupported" in error


def test_json_output_is_a_list_of_valid_plans(write: Callable[..., Path]) -> None:
    path = write(MINIMAL)
    code, out, error = invoke("plan", str(path), "--json")
    assert code == 0, error
    variants = json.loads(out)["variants"]
    plan = Plan.model_validate(variants[0])
    assert plan.name == "tiny" and plan.total_gpus == 16
    assert [r.name for r in plan.roles] == ["prefill-0", "decode-0", "router", "bench"]


def test_human_output_shows_roles_and_commands(write: Callable[..., Path]) -> None:
    code, out, error = invoke("plan", str(write(MINIMAL)))
    assert code == 0, error
    for text in ("prefill-0", "decode-0", "router", "sglang.launch_server", "1, 4", "org/tiny"):
        assert text in out


def test_schema_command_prints_the_recipe_schema(tmp_path: Path) -> None:
    code, out, _ = invoke("schema")
    assert code == 0
    schema = json.loads(out)
    recipe = schema["$defs"]["RecipeConfig"]
    assert {"name", "model", "resources", "backend", "benchmark"} <= set(recipe["properties"])
    assert recipe["additionalProperties"] is False
    assert "engine" in schema["$defs"]["BackendSection"]["properties"]
    two = schema["$defs"]["Schema2Recipe"]
    assert two["properties"]["schema"]["const"] == 2 and "schema" in two["required"]
    assert {"engine", "roles", "services"} <= set(two["properties"])
    assert "backend" not in two["properties"] and len(schema["anyOf"]) == 4
    out = tmp_path / "schema.json"
    assert invoke("schema", "--out", str(out))[0] == 0
    assert json.loads(out.read_text()) == schema
