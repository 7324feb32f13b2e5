"""scripts/plan-snapshot: a snapshot is `disagg plan --json` byte for byte, and its diff
finds any change in any plan (the check a restructure relies on to prove plans unchanged)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "plan-snapshot"


def snapshot(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    (root / "sim").mkdir()
    for name in ("1p1d.yaml", "agg.yaml"):
        shutil.copy(ROOT / "examples" / "sim" / name, root / "sim" / name)
    (root / "broken.yml").write_text("base: [unclosed\n")
    return root


@pytest.fixture(scope="module")
def before(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("snap") / "before"
    done = snapshot("write", out, "--corpus", corpus, "--text")
    assert done.returncode == 0, done.stderr
    assert "3 file(s) planned" in done.stdout
    return out


def test_a_snapshot_holds_what_disagg_plan_json_prints(corpus: Path, before: Path) -> None:
    direct = subprocess.run(
        [sys.executable, "-m", "disagg", "plan", "--json", "sim/1p1d.yaml"],
        cwd=corpus,
        capture_output=True,
        timeout=120,
    )
    assert (before / "sim" / "1p1d.yaml.json").read_bytes() == direct.stdout
    assert (before / "sim" / "1p1d.yaml.txt").read_text().startswith("base ")
    index = (before / "INDEX.tsv").read_text().splitlines()
    assert [line.split("\t")[:3] for line in index] == [
        ["broken.yml", "2", "0"],
        ["sim/1p1d.yaml", "0", "1"],
        ["sim/agg.yaml", "0", "1"],
    ]


def test_fresh_interpreters_give_the_same_snapshot(corpus: Path, before: Path) -> None:
    fresh = before.parent / "fresh"
    assert snapshot("write", fresh, "--corpus", corpus, "--text", "--fresh").returncode == 0
    done = snapshot("diff", before, fresh)
    assert done.returncode == 0, done.stdout
    assert "identical" in done.stdout


def test_diff_names_the_variant_and_path_that_changed(corpus: Path, before: Path) -> None:
    changed = before.parent / "changed"
    shutil.copytree(before, changed)
    plan = changed / "sim" / "1p1d.yaml.json"
    plan.write_text(plan.read_text().replace('"gpus_per_node": 8', '"gpus_per_node": 4', 1))
    (changed / "sim" / "agg.yaml.err").write_text("a new warning\n")
    done = snapshot("diff", before, changed)
    assert done.returncode == 1
    assert "variant sim/1p1d.yaml:base: .gpus_per_node: 8 -> 4" in done.stdout
    assert "sim/agg.yaml.err differs" in done.stdout
    assert "2 of " in done.stdout


def test_diff_counts_a_file_on_one_side_only(before: Path) -> None:
    fewer = before.parent / "fewer"
    shutil.copytree(before, fewer)
    (fewer / "sim" / "agg.yaml.txt").unlink()
    done = snapshot("diff", before, fewer)
    assert done.returncode == 1
    assert f"only in {before}: sim/agg.yaml.txt" in done.stdout


def test_bad_input_is_a_message_and_exit_2(corpus: Path, before: Path, tmp_path: Path) -> None:
    not_a_snapshot = snapshot("diff", before, tmp_path)
    assert not_a_snapshot.returncode == 2
    assert "is not a snapshot" in not_a_snapshot.stderr
    assert "Traceback" not in not_a_snapshot.stderr
    taken = snapshot("write", before, "--corpus", corpus)
    assert taken.returncode == 2
    assert "not an empty directory" in taken.stderr
