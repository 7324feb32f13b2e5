"""`setup_script`: a script run inside each worker's and each Dynamo frontend's container
before its program (srt-slurm v1.0.68: `WorkerStageMixin._build_worker_preamble`,
`DynamoFrontend._build_preamble`), found as `/configs/<name>` or `/configs/patches/<name>`.

Where srtctl warns and starts the engine without a missing script, the task fails here
(compat row `setup-script-missing`): such an engine measures something else.
"""

from __future__ import annotations

import shlex

from disagg.plan.model import WORKER_KINDS, RolePlan

CONFIGS_INSIDE = "/configs"  # where srtctl mounts its configs directory in every container
COMPAT_ROW = "setup-script-missing"
NAME_ARG = "setup-script"  # the wrapper's $0, as the task's process list shows it


def setup_commands(name: str) -> str:
    """Shell lines that find and run `name` from the configs directory, or fail."""
    quoted = shlex.quote(name)
    script = f'"${{run.configs}}"/{quoted}'
    patch = f'"${{run.configs}}"/patches/{quoted}'
    missing = f"setup_script {quoted}: neither {script} nor {patch} exists"
    return (
        f"if [ -f {script} ]; then s={script}; elif [ -f {patch} ]; then s={patch}; "
        f'else echo "{missing}" >&2; exit 1; fi; '
        'echo "Running setup script: $s" && bash "$s"'
    )


def running_setup_script(argv: list[str], name: str) -> list[str]:
    """`argv` preceded by the recipe's setup script; its arguments pass through."""
    return ["bash", "-c", f'{setup_commands(name)} && exec "$@"', NAME_ARG, *argv]


def in_stages(stages: list[list[RolePlan]], name: str, frontend: str) -> list[list[RolePlan]]:
    """`stages` with the setup script before every role srtctl runs it before (each of its
    nodes' commands): every worker, and the frontend processes of a Dynamo job (not nginx,
    not a router of another kind)."""

    def setting_up(role: RolePlan) -> RolePlan:
        if role.kind not in WORKER_KINDS and not (
            frontend == "dynamo" and "dynamo.frontend" in role.argv
        ):
            return role
        node_argv = [running_setup_script(argv, name) for argv in role.node_argv]
        return role.model_copy(
            update={"argv": running_setup_script(role.argv, name), "node_argv": node_argv}
        )

    return [[setting_up(role) for role in stage] for stage in stages]
