"""Heterogeneous Slurm jobs (`resources.het_jobs`, the cluster's `use_het_jobs`) as srtctl
plans them: prefill nodes in component 0, decode nodes in component 1, or refused where
srtctl refuses them (`SrtConfig._validate_het_jobs`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.cluster import ClusterProfile, load_profile
from disagg.errors import DisaggError
from disagg.launch.slurm import render
from disagg.plan.model import Plan
from disagg.plan.placement import place
from disagg.recipe.variants import load_variants

from .recipe_helpers import MINIMAL, invoke

Write = Callable[..., Path]
HET = MINIMAL.replace("  decode_workers: 1\n", "  decode_workers: 1\n  het_jobs: true\n")


def plan_of(write: Write, text: str, profile: ClusterProfile | None = None) -> Plan:
    (variant,) = load_variants(write(text))
    return place(variant, profile)


def test_het_jobs_puts_prefill_and_decode_in_their_own_components(
    write: Write, tmp_path: Path
) -> None:
    text = HET.replace(
        "  decode_nodes: 1\n  decode_workers: 1\n", "  decode_nodes: 2\n  decode_workers: 2\n"
    )
    plan = plan_of(write, text)
    assert plan.nodes == 3 and plan.slurm.het_nodes == [1, 2]
    ranks = {role.name: role.node_ranks for role in plan.roles}
    assert ranks["prefill-0"] == [0] and ranks["decode-0"] == [1] and ranks["decode-1"] == [2]
    assert [plan.slurm.het_group(r) for r in range(3)] == [0, 1, 1]
    assert not [item for item in plan.ignored if "het" in item["field"]]
    script = render(plan, tmp_path)
    assert script.count("#SBATCH hetjob") == 1
    assert script.count("#SBATCH --nodes=") == 2


def test_disagg_plan_shows_the_components(write: Write) -> None:
    code, out, _ = invoke("plan", str(write(HET, "r.yaml")))
    assert code == 0
    assert "heterogeneous job of 1 + 1 nodes (#SBATCH hetjob)" in out
    code, out, _ = invoke("plan", str(write(MINIMAL, "m.yaml")))
    assert code == 0 and "hetjob" not in out


def test_a_dedicated_infra_node_joins_the_prefill_component(write: Write) -> None:
    """srtctl's `het_components(infra_dedicated=True)`: group 0 is the infra node then the
    prefill nodes; the workers start after it."""
    text = HET + "infra:\n  etcd_nats_dedicated_node: true\n"
    plan = plan_of(write, text)
    assert plan.nodes == 3 and plan.slurm.het_nodes == [2, 1]
    assert plan.role("prefill-0").node_ranks == [1]
    assert plan.role("decode-0").node_ranks == [2]


def test_the_cluster_default_applies_unless_the_recipe_says_otherwise(
    write: Write, tmp_path: Path
) -> None:
    profile_file = tmp_path / "cluster.yaml"
    profile_file.write_text("gpus_per_node: 8\nuse_het_jobs: true\n")
    profile = load_profile(profile_file)
    assert plan_of(write, MINIMAL, profile).slurm.het_nodes == [1, 1]
    off = MINIMAL.replace("  decode_workers: 1\n", "  decode_workers: 1\n  het_jobs: false\n")
    assert plan_of(write, off, profile).slurm.het_nodes == []
    assert plan_of(write, MINIMAL).slurm.het_nodes == []


def test_an_srtslurm_cluster_config_carries_use_het_jobs(write: Write, tmp_path: Path) -> None:
    config = tmp_path / "srtslurm.yaml"
    config.write_text(
        "cluster: c\ngpus_per_node: 8\nuse_het_jobs: true\n"
        "default_mounts:\n  /lustre/hub: /hf_hub_cache\n"
    )
    profile = load_profile(config)
    assert profile.use_het_jobs and "use_het_jobs" not in profile.ignored_settings
    assert plan_of(write, MINIMAL, profile).slurm.het_nodes == [1, 1]


AGG = """\
  agg_nodes: 1
  agg_workers: 1
  het_jobs: true
"""


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda t: t.replace(
                "  prefill_nodes: 1\n  prefill_workers: 1\n  decode_nodes: 1\n"
                "  decode_workers: 1\n  het_jobs: true\n",
                AGG,
            ).replace("    prefill:\n      tp-size: 8\n    decode:\n", "    aggregated:\n"),
            "needs a disaggregated layout",
        ),
        (
            lambda t: t.replace("  decode_nodes: 1\n", "  decode_nodes: 0\n"),
            "decode_nodes >= 1",
        ),
        (
            lambda t: t + "  dedicated_node: true\n",
            "no node is reserved for the frontend",
        ),
        (
            lambda t: t.replace("backend:\n", "backend:\n  type: trtllm\n").replace(
                "sglang_config", "trtllm_config"
            ),
            "only for the sglang backend",
        ),
    ],
)
def test_shapes_srtctl_refuses_are_refused(
    write: Write, edit: Callable[[str], str], message: str
) -> None:
    with pytest.raises(DisaggError, match=message) as caught:
        plan_of(write, edit(HET))
    assert caught.value.location is not None
