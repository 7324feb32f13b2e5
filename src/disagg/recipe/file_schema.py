"""The JSON Schema of a recipe file, either dialect: what `disagg schema` prints."""

from __future__ import annotations

from typing import Any

from disagg.recipe.dialects.schema2_model import Schema2Recipe
from disagg.recipe.schema import RecipeConfig


def recipe_file_json_schema() -> dict[str, Any]:
    """JSON Schema of a recipe file (what `disagg schema` prints): v1 or `schema: 2`, each a
    flat recipe or an override file whose `base` and variant blocks are partial recipes
    merged at load time."""
    flat = RecipeConfig.model_json_schema()
    defs = flat.pop("$defs", {})
    defs["RecipeConfig"] = flat
    two = Schema2Recipe.model_json_schema()
    defs.update(two.pop("$defs", {}))
    marker = {"const": 2, "description": "srt-slurm 2.x recipe layout"}
    two["properties"] = {"schema": marker, **two["properties"]}
    two["required"] = ["schema", *two.get("required", [])]
    defs["Schema2Recipe"] = two
    block = {"type": ["object", "null"], "description": "partial recipe, merged onto `base`"}
    patterns = {
        "^override_": block,
        "^zip_override_": {
            **block,
            "description": "partial recipe whose list leaves are zipped into variants",
        },
        "^x-": {"description": "ignored; holds YAML anchors shared by several variants"},
    }
    override_file = {
        "type": "object",
        "required": ["base"],
        "properties": {"base": block},
        "patternProperties": patterns,
        "additionalProperties": False,
    }
    schema2_override_file = {
        **override_file,
        "required": ["schema", "base"],
        "properties": {"schema": marker, "base": block},
    }
    return {
        "title": "disagg recipe (srt-slurm v1 or schema 2)",
        "description": "A flat recipe, or `base:` plus `override_<name>:` / "
        "`zip_override_<name>:` blocks; `schema: 2` selects srt-slurm 2.x's layout. "
        "Top-level `x-` keys are ignored.",
        "anyOf": [
            {"$ref": "#/$defs/RecipeConfig"},
            override_file,
            {"$ref": "#/$defs/Schema2Recipe"},
            schema2_override_file,
        ],
        "$defs": defs,
    }
