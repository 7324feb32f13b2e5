"""The shipped Dynamo and mocker examples as the run tests use them: pointed at the tests'
tiny model, and reshaped to one aggregated worker where a test asks."""

from __future__ import annotations

import json
from pathlib import Path

from tiny_model import TinyModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def pointed_at(example: Path, model: TinyModel, path: Path) -> Path:
    """`example` written to `path` with its model (`"/tmp/tiny-llama"`, served as
    `"tiny-llama"`) replaced by `model`."""
    text = example.read_text().replace('"/tmp/tiny-llama"', json.dumps(str(model.path)))
    path.write_text(text.replace('"tiny-llama"', json.dumps(model.served_name)))
    return path


def one_aggregated(path: Path, resources: str, roles: str, settings: str) -> None:
    """Rewrite the 1P1D recipe at `path` to one aggregated worker: `resources` replaces its
    layout and the backend's per-role key `roles` keeps only `settings`, for that worker."""
    text = path.read_text()
    text = text.replace(text[text.index("resources:") : text.index("backend:")], resources)
    section = text[text.index(f"  {roles}:") : text.index("frontend:")]
    path.write_text(text.replace(section, f"  {roles}:\n    aggregated:\n      {settings}\n\n"))
