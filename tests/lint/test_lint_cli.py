"""`disagg lint` as scripts and people call it: exit codes, JSON for CI, text for humans."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from disagg.recipe.lint import lint_paths
from disagg.recipe.lint.fix import fix_text

DATA = Path(__file__).parent / "data"


def disagg(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "disagg", "lint", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_json_lists_findings_with_locations(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    shutil.copy(DATA / "cross_variant.yaml", path)
    done = disagg("--json", str(path))
    assert done.returncode == 1
    findings = json.loads(done.stdout)
    assert {f["rule"] for f in findings} == {"DA001"}
    first = findings[0]
    assert first["severity"] == "error" and first["fixable"] is True
    assert first["locations"][0] == {
        "file": str(path),
        "line": 34,
        "col": 24,
        "role": "anchor",
        "block": "override_lowlat",
    }


def test_human_output_and_fix_then_clean(tmp_path: Path) -> None:
    path = tmp_path / "r.yaml"
    shutil.copy(DATA / "cross_variant.yaml", path)
    done = disagg(str(path))
    assert done.returncode == 1
    assert f"{path}:34:24: DA001 error: anchor &graph_bs" in done.stdout
    fixed = disagg("--fix", str(path))
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "moved &graph_bs, &eagle into x-shared" in fixed.stdout
    assert disagg("--json", str(path)).stdout.strip() == "[]"


def test_unreadable_input_exits_two_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("base: [1\n")
    done = disagg(str(tmp_path / "bad.yaml"), str(tmp_path / "missing.yaml"))
    assert done.returncode == 2
    assert "Traceback" not in done.stdout + done.stderr
    assert "DA000" in done.stdout and "no such file" in done.stdout


_LINES = (DATA / "cross_variant.yaml").read_text().splitlines()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(
        st.tuples(
            st.sampled_from(["drop", "dup", "swap", "garble"]),
            st.integers(0, len(_LINES) - 1),
            st.integers(0, len(_LINES) - 1),
            st.sampled_from(["*", "&", ":", "[", "- ", "x-", "*graph_bs", "\t", "null", "'"]),
        ),
        max_size=4,
    )
)
def test_mutated_recipes_never_crash_the_linter_or_fixer(
    edits: list[tuple[str, int, int, str]],
) -> None:
    lines = list(_LINES)
    for op, i, j, junk in edits:
        i, j = i % len(lines), j % len(lines)
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(j, lines[i])
        elif op == "swap":
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = (
                lines[i][: j % (len(lines[i]) + 1)] + junk + lines[i][j % (len(lines[i]) + 1) :]
            )
        if not lines:
            lines = [""]
    text = "\n".join(lines) + "\n"
    fixed, result = fix_text(text, "m.yaml")
    assert (fixed is None) == (not result.changed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.yaml"
        path.write_text(text)
        report = lint_paths([path])
        assert report.exit_code in (0, 1, 2)
