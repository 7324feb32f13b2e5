"""The MI355X DeepSeek-R1 MXFP4 family: variants, placement, staging lists and robustness.

The family's promise is that every shared value is defined once (in `base` or an
`x-` block), so a variant can be deleted, renamed or reordered without touching
another. These tests hold it to that by deleting each variant in turn.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from disagg.cli import app
from disagg.commands import register_all
from disagg.plan.from_recipe import plans_for
from disagg.recipe.lint import lint_paths
from disagg.recipe.variants import load_variants

ROOT = Path(__file__).resolve().parents[2]
FAMILY = ROOT / "examples" / "mi355x" / "dsr1-fp4-disagg.yaml"
PROFILE = ROOT / "examples" / "clusters" / "mi355x.yaml"
MAIN = "amd/DeepSeek-R1-0528-MXFP4-v2"
DRAFT = "SGLang/DeepSeek-R1-NextN"

# variant -> (nodes, total GPUs, prefill GPUs, decode GPUs, concurrencies)
EXPECTED = {
    "override_stp_1p1d_tp8": (2, 16, 8, 8, [1, 2, 4, 8]),
    "override_stp_1p2d_tp8": (3, 24, 8, 16, [2, 4, 8, 16, 32, 64, 128, 256]),
    "override_stp_1p2d_ptp4_dtp8": (3, 20, 4, 16, [64, 128, 256]),
    "override_stp_1p1d_dep8": (2, 16, 8, 8, [128, 256, 512]),
    "override_stp_2p1d_dep8": (3, 24, 16, 8, [1024, 2048, 4096]),
    "override_mtp3_1p1d_tp8": (2, 16, 8, 8, [1, 2, 4, 8]),
    "override_mtp3_1p2d_tp8_wide": (3, 24, 8, 16, [2, 4, 8, 16, 32, 64]),
    "override_mtp3_1p2d_tp8_narrow": (3, 24, 8, 16, [2, 4, 8, 16, 32]),
    "override_mtp2_1p2d_tp8": (3, 24, 8, 16, [64, 128, 256]),
    "override_mtp3_1p1d_dep8": (2, 16, 8, 8, [64, 128, 256, 512, 640]),
    "override_mtp1_1p1d_dep8": (2, 16, 8, 8, [64, 128, 256, 512]),
    "override_mtp1_2p1d_dep8": (3, 24, 16, 8, [1024, 2048, 4096]),
}


def _flag(argv: list[str], name: str) -> list[str]:
    """The values after `--name` up to the next flag."""
    if name not in argv:
        return []
    start = argv.index(name) + 1
    end = start
    while end < len(argv) and not argv[end].startswith("--"):
        end += 1
    return argv[start:end]


def test_twelve_variants_with_their_topology() -> None:
    plans = plans_for([str(FAMILY)], PROFILE)
    got = {
        p.variant: (
            p.nodes,
            p.total_gpus,
            p.prefill_gpus,
            p.decode_gpus,
            [pt.concurrency for pt in p.bench.points],
        )
        for p in plans
    }
    assert got == EXPECTED


def test_engine_settings_per_variant() -> None:
    plans = {p.variant: p for p in plans_for([str(FAMILY)], PROFILE)}
    for name, plan in plans.items():
        decode = plan.roles_of(plan.roles[0].kind.__class__("decode"))[0]
        graph = [int(v) for v in _flag(decode.argv, "--cuda-graph-bs")]
        dep8 = "dep8" in name
        assert graph == list(range(1, (512 if dep8 else 128) + 1)), name
        assert _flag(decode.argv, "--disaggregation-transfer-backend") == ["mori"]
        if dep8:
            assert _flag(decode.argv, "--dp-size") == ["8"]
            assert _flag(decode.argv, "--ep-size") == ["8"]
            assert "--enable-dp-attention" in decode.argv
            assert _flag(decode.argv, "--moe-a2a-backend") == ["mori"]
            assert "--enable-two-batch-overlap" in decode.argv
        mtp = name.split("_")[1]
        if mtp.startswith("mtp"):
            steps = int(mtp[3:])
            assert _flag(decode.argv, "--speculative-algorithm") == ["NEXTN"]
            assert _flag(decode.argv, "--speculative-num-steps") == [str(steps)]
            assert _flag(decode.argv, "--speculative-num-draft-tokens") == [str(steps + 1)]
            assert _flag(decode.argv, "--speculative-eagle-topk") == ["1"]
            assert _flag(decode.argv, "--speculative-draft-model-path") == ["${model.draft}"]
            assert plan.bench.use_chat_template
        else:
            assert "--speculative-algorithm" not in decode.argv
            assert not plan.bench.use_chat_template
        assert plan.bench.isl == 8192 and plan.bench.osl == 1024
        for point in plan.bench.points:
            assert point.concurrency is not None
            assert point.num_prompts == max(16, 10 * point.concurrency)
            assert point.warmup_requests == 2 * point.concurrency
    mrr = {
        "override_stp_1p1d_dep8": "512",
        "override_stp_2p1d_dep8": "4096",
        "override_mtp3_1p1d_dep8": "640",
        "override_mtp1_1p1d_dep8": "512",
        "override_mtp1_2p1d_dep8": "4096",
    }
    for name, value in mrr.items():
        decode = next(r for r in plans[name].roles if r.name == "decode-0")
        assert _flag(decode.argv, "--max-running-requests") == [value], name


def test_amd_cluster_specifics_reach_the_roles() -> None:
    plan = plans_for([f"{FAMILY}:override_stp_1p1d_tp8"], PROFILE)[0]
    assert plan.gpu_vendor.visible_devices_vars == ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
    for role in plan.roles_of(plan.roles[0].kind):
        assert role.env["NCCL_SOCKET_IFNAME"] == "enp81s0f1"
        assert role.env["GLOO_SOCKET_IFNAME"] == "enp81s0f1"
        devices = _flag(role.argv, "--disaggregation-ib-device")
        assert devices == [",".join(f"rdma{i}" for i in range(8))]
        assert "CUDA_VISIBLE_DEVICES" not in role.env
    assert plan.slurm.pyxis and plan.slurm.gpu_directive == "gres"
    assert plan.slurm.container_image and plan.slurm.container_image.endswith(".sqsh")
    assert {"/dev/kfd", "/dev/dri"} <= set(plan.slurm.container_mounts)
    [container] = plan.staging.containers
    assert container.image.startswith("docker://")
    assert container.import_command[:2] == ["enroot", "import"]


def test_lint_is_clean() -> None:
    report = lint_paths([FAMILY])
    assert [f for f in report.findings if f.severity.value != "info"] == []
    assert report.exit_code == 0


def _without(block: str, tmp_path: Path) -> Path:
    yaml = YAML()
    yaml.preserve_quotes = True
    doc = yaml.load(FAMILY.read_text())
    del doc[block]
    out = tmp_path / f"without-{block}.yaml"
    with out.open("w") as handle:
        yaml.dump(doc, handle)
    return out


@pytest.mark.parametrize("deleted", sorted(EXPECTED))
def test_deleting_any_variant_leaves_the_others_unchanged(deleted: str, tmp_path: Path) -> None:
    before = {v.name: v.raw for v in load_variants(FAMILY)}
    after = {v.name: v.raw for v in load_variants(_without(deleted, tmp_path))}
    expected = {name: raw for name, raw in before.items() if name != deleted}
    assert after == expected


def test_reordering_variants_changes_nothing(tmp_path: Path) -> None:
    yaml = YAML()
    doc = yaml.load(FAMILY.read_text())
    names = [k for k in doc if str(k).startswith("override_")]
    values = {name: doc.pop(name) for name in names}
    for name in reversed(names):
        doc[name] = values[name]
    out = tmp_path / "reversed.yaml"
    with out.open("w") as handle:
        yaml.dump(doc, handle)
    before = {v.name: v.raw for v in load_variants(FAMILY)}
    after = {v.name: v.raw for v in load_variants(out)}
    assert after == before
    assert list(after) == list(reversed(list(before)))


def test_stage_dry_run_lists_the_draft_only_for_mtp() -> None:
    register_all(app)
    result = CliRunner().invoke(
        app, ["stage", str(FAMILY), "--cluster", str(PROFILE), "--dry-run", "--json"]
    )
    assert result.exit_code == 0, result.output
    variants = json.loads(result.stdout)["variants"]
    assert len(variants) == 12
    for entry in variants:
        name = entry["selector"].rsplit(":", 1)[1]
        repos = [(m["purpose"], m["repo_id"]) for m in entry["models"]]
        if name.startswith("override_mtp"):
            assert repos == [("main", MAIN), ("draft", DRAFT)], name
        else:
            assert repos == [("main", MAIN)], name
        [image] = entry["containers"]
        assert image["action"] == "import"


def test_submit_dry_run_writes_runs_under_the_profile_results_root(tmp_path: Path) -> None:
    """Run directories go to the cluster's shared results root unless --out says otherwise."""
    import os
    import subprocess
    import sys

    profile = tmp_path / "site.yaml"
    text = PROFILE.read_text().replace(
        "results_root: /shared/results/disagg", f"results_root: {tmp_path / 'results'}"
    )
    profile.write_text(text)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "disagg", "submit"),
            f"{FAMILY}:override_mtp3_1p1d_tp8",
            *("--cluster", str(profile), "--dry-run", "--json"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": "/nonexistent"},  # no Slurm needed for a dry run
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    run_dir = Path(row["run_dir"])
    assert run_dir.parent == tmp_path / "results" / "mi355x-dsr1-fp4-mtp3-1p1d-tp8"
    assert (run_dir / "plan.json").is_file() and (run_dir / "job.sbatch").is_file()
    assert row["job_id"] is None
