"""Checks `disagg submit` runs before anything reaches `sbatch`.

A job that cannot start is refused here with its reason, instead of waiting in the
queue or failing on the nodes an hour later.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from disagg.cluster import ClusterProfile
from disagg.errors import DisaggError
from disagg.launch import slurmctl
from disagg.plan.model import Plan
from disagg.plan.stage_list import MISSING_MODEL_HINT, missing_model_dir


@dataclass
class Preflight:
    """What was found: errors refuse the submission, warnings are printed."""

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def extend(self, other: Preflight) -> None:
        self.errors += other.errors
        self.warnings += other.warnings


def check_recipes(files: Iterable[str], profile: ClusterProfile | None = None) -> Preflight:
    """Lint each recipe file once, on the cluster profile the plans were made on (DA013
    plans again); an error-severity finding refuses the submission."""
    from disagg.recipe.lint import Severity, lint_paths

    paths = sorted({Path(f) for f in files if f and Path(f).is_file()})
    findings = lint_paths(paths, profile).findings if paths else []
    errors = [
        f"lint: {f.where}: {f.rule} {f.message}" if f.where else f"lint: {f.message}"
        for f in findings
        if f.severity is Severity.ERROR
    ]
    return Preflight(errors=errors)


def check_models(plan: Plan) -> Preflight:
    """The model must be complete now, or listed for the job to download and validate."""
    from disagg.staging.checkpoint import UnusableInput, check

    result = Preflight()
    staging = plan.staging
    if staging.skip:
        return result
    targets: list[tuple[str, str | None]] = []
    missing = missing_model_dir(staging)
    if missing:  # srtctl fails alike: "Model path does not exist"
        result.errors.append(f"model directory {missing} does not exist ({MISSING_MODEL_HINT})")
    elif staging.local_path:
        targets.append((staging.local_path, None))
    elif not staging.allow_download:
        targets += [(m.repo_id, m.revision) for m in staging.models]
    for target, revision in targets:
        try:
            report = check(target, revision=revision, cache=staging.hf_cache)
        except UnusableInput as exc:
            result.errors.append(f"model {target}: {exc}")
            continue
        if not report.complete:
            first = "; ".join(str(p) for p in report.problems[:3])
            more = f" (+{len(report.problems) - 3} more)" if len(report.problems) > 3 else ""
            result.errors.append(f"model {target} is incomplete: {first}{more}")
    return result


def check_containers(plan: Plan) -> Preflight:
    """With pyxis, a container image given as a file (squashfs) must exist on this filesystem."""
    result = Preflight()
    if not plan.slurm.pyxis:
        return result
    images = {plan.slurm.container_image, *(role.container_image for role in plan.roles)}
    importable = {c.squashfs: c.image for c in plan.staging.containers}
    for image in sorted(i for i in images if i):
        looks_like_file = image.startswith(("/", "./", "../")) or image.endswith(".sqsh")
        if not looks_like_file or Path(image).is_file():
            continue
        if image in importable:
            result.warnings.append(
                f"container image {image} does not exist yet: the job imports it from "
                f"{importable[image]} first (`disagg stage` does it now, outside GPU time)"
            )
        else:
            result.errors.append(f"container image {image} does not exist")
    return result


def check_secrets(plan: Plan) -> Preflight:
    """Secrets travel in the submitter's environment; say so when one the job needs is unset."""
    result = Preflight()
    if plan.staging.skip:
        return result
    for name in plan.slurm.secret_env:
        if not os.environ.get(name):
            result.warnings.append(
                f"{name} is not set here; the job inherits this environment and will lack it"
            )
    return result


def check_cluster(plans: list[Plan]) -> Preflight:
    """Partition exists and is up, and holds enough nodes with enough GPUs for each plan."""
    result = Preflight()
    parts = slurmctl.partitions()
    node_gpus = {info.name: info.gpus for info in slurmctl.nodes()}
    default = next((p.name for p in parts.values() if p.default), None)
    for plan in plans:
        slurm = plan.slurm
        wanted = slurm.directives.get("partition") or slurm.partition or default
        label = plan.selector
        if wanted is None:
            result.errors.append(f"{label}: no partition given and the cluster has no default")
            continue
        part = parts.get(wanted)
        if part is None:
            known = ", ".join(sorted(parts)) or "none"
            result.errors.append(f"{label}: partition {wanted!r} does not exist (known: {known})")
            continue
        if part.state != "UP":
            result.warnings.append(
                f"{label}: partition {wanted} is {part.state}; the job will wait"
            )
        if slurm.nodes > len(part.nodes):
            result.errors.append(
                f"{label}: needs {slurm.nodes} node(s); partition {wanted} has {len(part.nodes)}"
            )
        elif part.max_nodes is not None and slurm.nodes > part.max_nodes:
            result.errors.append(
                f"{label}: needs {slurm.nodes} node(s); partition {wanted} allows at most "
                f"{part.max_nodes} per job"
            )
        elif slurm.gpus_per_node > 0 and slurm.gpu_directive != "none":
            enough = [n for n in part.nodes if node_gpus.get(n, 0) >= slurm.gpus_per_node]
            if len(enough) < slurm.nodes:
                most = max((node_gpus.get(n, 0) for n in part.nodes), default=0)
                result.errors.append(
                    f"{label}: needs {slurm.nodes} node(s) with {slurm.gpus_per_node} GPUs; "
                    f"partition {wanted} has {len(enough)} (most GPUs on a node: {most})"
                )
    return result


def check_benchmark(plan: Plan) -> Preflight:
    """What the job's benchmark step would refuse: an unknown type, an unreadable trace."""
    from disagg.workloads import adapter_for

    try:
        adapter_for(plan.bench.type).prepare(plan.bench)
    except DisaggError as exc:
        return Preflight(errors=[f"{plan.selector}: {exc.message}"])
    return Preflight()


def check_job_script(plan: Plan) -> Preflight:
    """The directives job.sbatch would carry: refused here, before the run directory."""
    from disagg.launch.slurm import directives

    try:
        directives(plan.slurm, Path(plan.name))
    except DisaggError as exc:
        hint = f" ({exc.hint})" if exc.hint else ""
        return Preflight(errors=[f"{plan.selector}: {exc.message}{hint}"])
    return Preflight()


def check_plans(
    plans: list[Plan], *, cluster: bool = True, profile: ClusterProfile | None = None
) -> Preflight:
    """Every check for every plan (made on `profile`); `cluster=False` skips the questions
    to Slurm."""
    result = check_recipes((plan.recipe_file for plan in plans), profile)
    checks = (check_benchmark, check_job_script, check_models, check_containers, check_secrets)
    for plan in plans:
        for check in checks:
            result.extend(check(plan))
    if cluster:
        result.extend(check_cluster(plans))
    result.errors = list(dict.fromkeys(result.errors))
    result.warnings = list(dict.fromkeys(result.warnings))
    return result
