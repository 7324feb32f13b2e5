"""Golden files: the rendered job.sbatch and the srun command lines of a 1P2D variant.

The recorded files are in tests/slurm/golden/. After an intended change, regenerate
them and review the diff:

    DISAGG_UPDATE_GOLDEN=1 .venv/bin/pytest tests/slurm/test_golden.py
"""

from __future__ import annotations

import pytest

from disagg.errors import DisaggError
from disagg.launch.slurm import render
from disagg.plan.model import Plan, SlurmPlan

from .conftest import one_p_two_d_plan
from .golden_support import RUN_DIR, check_golden, srun_lines

PYTHON = "/opt/disagg/.venv/bin/python"


def cluster_plan(**slurm: object) -> Plan:
    defaults: dict[str, object] = {
        "job_name": "sim-1p2d",
        "nodes": 3,
        "gpus_per_node": 8,
        "partition": "batch",
        "account": "perf team",
        "time_limit": "01:30:00",
        "directives": {"constraint": "h100&ib", "mem": "0", "comment": "it's a test; $HOME"},
        "secret_env": ["HF_TOKEN"],
    }
    defaults.update(slurm)
    return one_p_two_d_plan(
        slurm=SlurmPlan.model_validate(defaults), argv_prefix=[PYTHON, "-m", "disagg"]
    )


def test_job_sbatch_gres_exclusive() -> None:
    check_golden("1p2d-gres.sbatch", render(cluster_plan(), RUN_DIR, python=PYTHON))


def test_job_sbatch_gpus_per_node_shared_nodes() -> None:
    plan = cluster_plan(
        gpu_directive="gpus-per-node",
        exclusive=False,
        account=None,
        directives={},
    )
    check_golden("1p2d-gpus-per-node.sbatch", render(plan, RUN_DIR, python=PYTHON))


def test_job_sbatch_heterogeneous_job() -> None:
    """srtctl's het template: one block per component (its own nodes and segment, the
    partition, account, time, GPUs and extra directives repeated), `#SBATCH hetjob`
    between them; the job-wide name, output and time-limit warning once, in the first."""
    plan = cluster_plan(het_nodes=[1, 2], segment=3)
    text = render(plan, RUN_DIR, python=PYTHON)
    check_golden("1p2d-het.sbatch", text)
    directives = [line for line in text.splitlines() if line.startswith("#SBATCH")]
    split = directives.index("#SBATCH hetjob")
    first, second = directives[:split], directives[split + 1 :]
    assert "#SBATCH --nodes=1" in first and "#SBATCH --segment=1" in first
    assert "#SBATCH --nodes=2" in second and "#SBATCH --segment=2" in second
    for line in ("#SBATCH --partition=batch", "#SBATCH --gres=gpu:8", "#SBATCH --mem=0"):
        assert line in first and line in second
    assert not [line for line in second if line.split("=")[0].endswith(("name", "signal"))]


def test_srun_lines_of_a_heterogeneous_job_name_each_nodes_component() -> None:
    plan = cluster_plan(het_nodes=[1, 2])
    text = srun_lines(plan)
    check_golden("1p2d-het-srun.txt", text)
    for line in text.splitlines():
        node = line.split("--nodelist=", 1)[1].split()[0]
        group = "0" if node == "gpu-a01" else "1"
        assert f"--het-group={group} " in line, line


def test_srun_lines() -> None:
    check_golden("1p2d-srun.txt", srun_lines(cluster_plan()))


def test_srun_lines_with_pyxis_container() -> None:
    plan = cluster_plan(
        container_image="/shared/images/sglang v0.5.sqsh",
        container_mounts={"/shared/models": "/models", str(RUN_DIR): str(RUN_DIR)},
        pyxis=True,
        srun_options={"cpu-bind": "none", "mpi": "pmix"},
    )
    for role in plan.roles:
        if role.kind.value in ("prefill", "decode"):
            role.container_image = plan.slurm.container_image
    check_golden("1p2d-srun-pyxis.txt", srun_lines(plan))


def test_srun_lines_with_a_role_image_and_role_srun_options() -> None:
    """Schema 2's `roles.<role>.container` / `srun_options`: the prefill steps run in the
    prefill's own image with its srun options over the job's; the decode steps keep the
    job's image and options."""
    plan = cluster_plan(
        container_image="/shared/images/sglang.sqsh",
        container_mounts={"/shared/models": "/models"},
        pyxis=True,
        srun_options={"cpu-bind": "none", "mem": "0"},
    )
    for role in plan.roles:
        if role.kind.value == "prefill":
            role.container_image = "/shared/images/sglang-prefill.sqsh"
            role.srun_options = {"mem": "64G", "exclusive": ""}
        elif role.kind.value == "decode":
            role.container_image = plan.slurm.container_image
    text = srun_lines(plan)
    check_golden("1p2d-srun-role-images.txt", text)
    for line in text.splitlines():
        if "--job-name=disagg.prefill-" in line:
            assert "--container-image=/shared/images/sglang-prefill.sqsh" in line
            assert line.count("--mem=") == 1 and "--mem=64G" in line and " --exclusive " in line
        elif "--job-name=disagg.decode-" in line:
            assert "--container-image=/shared/images/sglang.sqsh" in line
            assert "--mem=0" in line and "--exclusive" not in line


def test_sbatch_never_holds_environment_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_do_not_write")
    text = render(cluster_plan(), RUN_DIR, python=PYTHON)
    assert "hf_secret_do_not_write" not in text
    assert "--export" not in text


def test_no_container_flags_without_pyxis() -> None:
    plan = cluster_plan(container_image="/shared/images/sglang.sqsh")
    plan.roles[0].container_image = plan.slurm.container_image
    assert "--container" not in srun_lines(plan)


def test_comma_values_never_go_through_export() -> None:
    text = srun_lines(cluster_plan())
    assert "--export" not in text
    assert "MODEL_REPOS" not in text  # the environment is set on the srun process instead


@pytest.mark.parametrize(
    ("directives", "message"),
    [
        ({"output": "/tmp/x"}, "cannot be overridden"),
        ({"bad key": "1"}, "not an option name"),
        ({"comment": "two\nlines"}, "line break"),
    ],
)
def test_bad_directives_are_refused(directives: dict[str, str], message: str) -> None:
    with pytest.raises(DisaggError, match=message):
        render(cluster_plan(directives=directives), RUN_DIR, python=PYTHON)


def test_container_mount_with_comma_is_refused() -> None:
    plan = cluster_plan(container_image="img.sqsh", container_mounts={"/a,b": "/c"}, pyxis=True)
    plan.roles[0].container_image = "img.sqsh"
    with pytest.raises(DisaggError, match="contains ','"):
        srun_lines(plan)


@pytest.mark.parametrize(
    ("time_limit", "directives", "signal"),
    [
        ("01:30:00", {}, "B:USR1@60"),  # a minute before a long limit
        ("5", {}, "B:USR1@30"),  # a tenth of a short one
        (None, {}, "B:USR1@60"),  # the partition's limit: the full margin
        ("1", {"signal": "B:USR1@40"}, "B:USR1@40"),  # the recipe's own replaces it
    ],
)
def test_slurm_warns_the_orchestrator_before_its_time_limit(
    time_limit: str | None, directives: dict[str, str], signal: str
) -> None:
    text = render(cluster_plan(time_limit=time_limit, directives=directives), RUN_DIR)
    assert [line for line in text.splitlines() if "--signal" in line] == [
        f"#SBATCH --signal={signal}"
    ]


def test_only_a_multi_node_job_outlives_a_lost_node() -> None:
    # --no-kill: the orchestrator sees which roles the node took and fails naming them
    assert "#SBATCH --no-kill" in render(cluster_plan(), RUN_DIR).splitlines()
    assert "--no-kill" not in render(cluster_plan(nodes=1), RUN_DIR)


@pytest.mark.parametrize(
    ("given", "warning"),
    [
        (None, "USR1"),
        ("B:USR1@40", "USR1"),
        ("B:SIGUSR2@120", "USR2"),
        ("RB:usr2@90", "USR2"),
        ("USR1@60", None),  # to every role, not the orchestrator: a role would die of it
        ("B:TERM@120", None),  # would read as a cancel
        ("B:10@60", None),
        ("whenever", None),
    ],
)
def test_the_time_limit_warning_is_a_signal_only_the_orchestrator_gets(
    given: str | None, warning: str | None
) -> None:
    from disagg.launch.slurm import check_signal_directive, warning_signal

    slurm = cluster_plan(directives={"signal": given} if given else {}).slurm
    assert warning_signal(slurm) == warning
    if warning is None:
        with pytest.raises(DisaggError, match="as B:USR1@N or B:USR2@N"):
            check_signal_directive(slurm)
    else:
        check_signal_directive(slurm)
