"""docs/compat.md and `disagg.plan.compat` list the same deliberate differences, and a plan
names the ones it hits where a user looks (plan output and plan.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from disagg.plan.compat import DIFFERENCES, differs, rows
from disagg.plan.from_recipe import plans_for

from .recipe_helpers import invoke

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "compat.md"


def _doc_rows() -> list[list[str]]:
    """The cells of each body row of the differences table in docs/compat.md (the first
    table: the page's later sections have tables of their own)."""
    text = DOC.read_text()
    table = text[text.index("| id | srtctl | disagg | why |") :].split("\n\n", 1)[0]
    lines = table.splitlines()
    body = [line for line in lines[1:] if not re.fullmatch(r"[| -]+", line)]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in body]


def _plain(markdown: str) -> str:
    return markdown.replace("`", "")


def test_doc_and_table_have_the_same_rows_in_order() -> None:
    doc = _doc_rows()
    assert [cells[0] for cells in doc] == list(DIFFERENCES)
    for cells in doc:
        row = DIFFERENCES[cells[0]]
        assert [_plain(c) for c in cells[1:]] == [
            _plain(row.srtctl),
            _plain(row.disagg),
            _plain(row.why),
        ]


def test_an_unknown_id_is_a_bug_not_a_silent_row() -> None:
    with pytest.raises(KeyError, match="no-such-row"):
        differs("no-such-row")
    assert [row["id"] for row in rows(["load-generator", "smg-router", "load-generator"])] == [
        "load-generator",
        "smg-router",
    ]


def test_plan_names_the_differences_it_hits() -> None:
    (plan,) = plans_for([str(ROOT / "examples" / "sim" / "1p1d.yaml")], None)
    assert [row["id"] for row in plan.differs] == [
        "smg-router",
        "load-generator",
        "ports",
        "listen-address",
    ]
    recipe = str(ROOT / "examples" / "sim" / "1p1d.yaml")
    code, out, err = invoke("plan", recipe)
    assert code == 0, err
    lines = out.splitlines()
    title = next(n for n, line in enumerate(lines) if line.startswith("differs from srt-slurm"))
    assert lines[title + 1].startswith("  [smg-router] runs smg")
    code, out, err = invoke("plan", recipe, "--json")
    assert code == 0, err
    assert '"id": "smg-router"' in json.dumps(json.loads(out))


def test_a_pinned_sglang_router_is_not_a_difference(tmp_path: Path) -> None:
    recipe = (ROOT / "examples" / "sim" / "1p1d.yaml").read_text()
    pinned = tmp_path / "pinned.yaml"
    pinned.write_text(recipe.replace("frontend:\n", "frontend:\n  package: sglang-router\n", 1))
    (plan,) = plans_for([str(pinned)], None)
    assert plan.frontend == "sglang-router"
    assert "smg-router" not in [row["id"] for row in plan.differs]
