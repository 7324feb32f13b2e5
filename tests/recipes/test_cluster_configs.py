"""srt-slurm cluster configs (`srtslurm.yaml`) work wherever a disagg cluster profile does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from disagg.cluster import load_profile
from disagg.errors import DisaggError
from disagg.launch.slurm import directives
from disagg.plan.from_recipe import load_cluster, plans_for
from disagg.plan.model import GpuVendor

from .recipe_helpers import MINIMAL, invoke

Write = Callable[..., Path]
# srt-slurm cluster configs of AMD clusters, in InferenceX's form, written for these tests
AMD_CONFIGS = sorted((Path(__file__).parent / "data" / "cluster-configs").glob("amd-*.yaml"))

SRTSLURM = """\
cluster: gb200-east
default_account: team
default_partition: batch
default_time_limit: "02:00:00"
gpus_per_node: 4
network_interface: enP6p3s0f0np0
use_gpus_per_node_directive: true
use_segment_sbatch_directive: true
use_exclusive_sbatch_directive: true
default_mounts:
  /lustre/models: /models
containers:
  sglang: /lustre/images/sglang-0.5.sqsh
model_paths:
  tiny: /lustre/models/tiny
default_bash_preamble: "ulimit -n 65536"
"""


def test_amd_cluster_configs_load_as_amd_profiles() -> None:
    assert len(AMD_CONFIGS) == 3
    for path in AMD_CONFIGS:
        profile = load_profile(path)
        assert profile.name == path.stem
        assert profile.partition == "compute" and profile.gpus_per_node == 8
        assert profile.gpu_vendor is GpuVendor.AMD and profile.gpu_directive == "gres"
        assert profile.network_interface and "/dev/kfd" in profile.mounts
        assert profile.segment is False


def test_every_key_maps_onto_the_plan_and_the_sbatch_file(write: Write) -> None:
    cluster = write(SRTSLURM, "srtslurm.yaml")
    recipe = write(
        MINIMAL.replace("hf:org/tiny", "tiny")
        .replace("gpus_per_node: 8", "gpus_per_node: 4")
        .replace("tp-size: 8", "tp-size: 4")
    )
    [plan] = plans_for([str(recipe)], cluster)
    slurm = plan.slurm
    assert (slurm.partition, slurm.account, slurm.time_limit) == ("batch", "team", "02:00:00")
    assert slurm.gpu_directive == "gpus-per-node" and slurm.exclusive and slurm.segment == 2
    # srtctl mounts the resolved local model directory at /model as well (core/runtime.py,
    # RuntimeContext.from_config), even when a cluster mount already holds it
    assert slurm.container_mounts == {"/lustre/models": "/models", "/lustre/models/tiny": "/model"}
    assert slurm.container_image == "/lustre/images/sglang-0.5.sqsh"
    assert plan.staging.local_path == "/lustre/models/tiny"
    assert plan.role("prefill-0").env["NCCL_SOCKET_IFNAME"] == "enP6p3s0f0np0"
    assert {
        "field": "cluster.default_bash_preamble",
        "action": "ignored",
        "why": "no shell preamble runs before roles",
    } in plan.ignored
    pairs = dict(directives(slurm, Path("/run")))
    assert pairs["segment"] == "2" and pairs["gpus-per-node"] == "4" and "exclusive" in pairs


def test_srtslurm_yaml_is_found_as_srt_slurm_finds_it(
    write: Write, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(SRTSLURM, "srtslurm.yaml")
    deeper = tmp_path / "recipes" / "team"
    deeper.mkdir(parents=True)
    monkeypatch.delenv("SRTSLURM_CONFIG", raising=False)
    monkeypatch.chdir(deeper)  # two levels below, as srt-slurm searches
    found = load_cluster(None)
    assert found is not None and found.partition == "batch"
    elsewhere = tmp_path / "other.yaml"
    elsewhere.write_text(SRTSLURM.replace("partition: batch", "partition: debug"))
    monkeypatch.setenv("SRTSLURM_CONFIG", str(elsewhere))
    found = load_cluster(None)
    assert found is not None and found.partition == "debug"


def test_unknown_key_is_checked_against_srt_slurms_key_set(write: Write) -> None:
    path = write(SRTSLURM + "default_partitoin: x\n", "srtslurm.yaml")
    with pytest.raises(DisaggError) as caught:
        load_profile(path)
    assert "unknown key `default_partitoin`" in caught.value.message
    assert caught.value.location is not None and caught.value.location.line == 17
    assert caught.value.hint is not None and "did you mean `default_partition`" in caught.value.hint


def test_cluster_import_writes_an_equivalent_disagg_profile(write: Write, tmp_path: Path) -> None:
    source = write(SRTSLURM, "srtslurm.yaml")
    out = tmp_path / "imported.yaml"
    code, printed, err = invoke("cluster", "import", str(source), "--output", str(out))
    assert code == 0 and "wrote" in printed, err
    text = out.read_text()
    assert "default_partition" not in text and "partition: batch" in text
    assert load_profile(out) == load_profile(source)
    code, _, err = invoke("cluster", "import", str(write("default_partition: [x]\n", "bad.yaml")))
    assert code == 2 and "default_partition" in err


def test_disagg_profiles_still_load_unchanged() -> None:
    profile = load_profile(Path(__file__).resolve().parents[2] / "examples/clusters/mi355x.yaml")
    assert profile.gpu_vendor is GpuVendor.AMD and profile.exclusive is True
    assert profile.ignored_settings == {}


def test_the_clusters_default_host_setup_runs_unless_the_recipe_has_its_own(
    write: Write,
) -> None:
    """srt-slurm's `default_host_setup`: every recipe's, until one sets `host_setup` itself."""
    cluster = write(
        SRTSLURM + "default_host_setup:\n  commands: [nvidia-smi -lgc 1980]\n"
        "  teardown: [nvidia-smi -rgc]\n",
        "srtslurm.yaml",
    )
    recipe = MINIMAL.replace("hf:org/tiny", "tiny").replace("gpus_per_node: 8", "gpus_per_node: 4")
    recipe = recipe.replace("tp-size: 8", "tp-size: 4")
    [plan] = plans_for([str(write(recipe))], cluster)
    assert plan.host_setup is not None
    assert plan.host_setup.commands == ["nvidia-smi -lgc 1980"]
    assert plan.host_setup.teardown == ["nvidia-smi -rgc"]
    assert not [item for item in plan.ignored if "host_setup" in item["field"]]
    own = write(recipe + "host_setup:\n  commands: [echo own]\n", "own.yaml")
    [plan] = plans_for([str(own)], cluster)
    assert plan.host_setup is not None and plan.host_setup.commands == ["echo own"]
    assert plan.host_setup.teardown == []  # replaced, not merged
