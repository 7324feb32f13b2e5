"""`disagg plan DIR` and many files: every file planned or reported, a summary, abridged output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from .recipe_helpers import MINIMAL, invoke

Write = Callable[..., Path]


def _tree(write: Write) -> Path:
    write(MINIMAL, "a-good.yaml")
    write(MINIMAL.replace("backend:\n", "backend:\n  type: tilert\n"), "b-atom.yaml")
    write("name: [unclosed\n", "c-broken.yaml")
    write(MINIMAL.replace("gpu_type: h100", "gpu_typo: h100"), "d-typo.yaml")
    write("default_partition: batch\ngpus_per_node: 8\n", "srtslurm.yaml")
    return Path(write(MINIMAL, "e-good.yaml")).parent


def test_a_directory_plans_every_file_and_a_bad_one_stops_nothing(write: Write) -> None:
    root = _tree(write)
    code, out, err = invoke("plan", str(root))
    assert code == 2  # bad input in some file
    assert out.count("tiny") >= 2  # both good files planned and shown
    assert "unsupported: a TileRT prefill worker" in err
    assert "c-broken.yaml:" in err and "malformed YAML" in err
    assert "unknown key `resources.gpu_typo`" in err
    assert "srtslurm.yaml: skipped, an srt-slurm cluster config" in err
    summary = err.strip().splitlines()[-1]
    assert summary.startswith("6 file(s): 2 variant(s) planned, 1 unsupported, 2 file(s) bad input")
    assert "by engine: sglang 2 planned; tilert 1 unsupported" in summary


def test_json_lists_every_outcome(write: Write) -> None:
    root = _tree(write)
    code, out, _ = invoke("plan", str(root), "--json")
    payload = json.loads(out)
    assert code == 2
    assert len(payload["variants"]) == 2 and len(payload["unsupported"]) == 1
    assert sorted(Path(e["selector"]).name for e in payload["errors"]) == [
        "c-broken.yaml",
        "d-typo.yaml",
    ]
    assert payload["not_recipes"][0]["file"].endswith("srtslurm.yaml")


def test_a_file_with_nothing_planned_prints_only_its_error(write: Write) -> None:
    path = write(MINIMAL.replace("  gpu_type: h100\n", "  gpu_typo: h100\n"))
    code, out, err = invoke("plan", str(path))
    assert code == 2 and "unknown key `resources.gpu_typo`" in err
    assert out == ""  # no "0 variant(s), 0 GPUs in total" beside the error


def test_unsupported_only_is_exit_1_when_something_planned(write: Write) -> None:
    write(MINIMAL, "a.yaml")
    root = write(MINIMAL.replace("backend:\n", "backend:\n  type: tilert\n"), "b.yaml").parent
    code, _, err = invoke("plan", str(root))
    assert code == 1 and "1 unsupported" in err


def test_a_512_entry_list_is_abridged_on_screen_and_whole_in_json(write: Write) -> None:
    sizes = ", ".join(str(n) for n in range(1, 513))
    path = write(
        MINIMAL.replace(
            "      tp-size: 8\n", f"      tp-size: 8\n      cuda-graph-bs: [{sizes}]\n", 1
        )
    )
    code, out, _ = invoke("plan", str(path))
    assert code == 0
    assert "(504 more)" in out and "511 512" in out and " 300 " not in out
    assert "abridged" in out
    code, out, _ = invoke("plan", str(path), "--json")
    argv = json.loads(out)["variants"][0]["roles"][0]["argv"]
    start = argv.index("--cuda-graph-bs")
    assert argv[start + 1 : start + 513] == [str(n) for n in range(1, 513)]
