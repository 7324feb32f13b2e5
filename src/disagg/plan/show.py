"""Human view of plans: a summary and a role table per variant, then each role's command
shell-quoted on one line, so that it can be pasted.

Plain lines with typer's styling, as lint prints its findings: a plan is a few aligned
columns, and loading and rendering rich's tables was a third of `disagg plan FILE`.
"""

from __future__ import annotations

import shlex
import shutil
import textwrap

import typer

from disagg.console import styled
from disagg.plan.model import WORKER_KINDS, Plan, RoleKind, RolePlan
from disagg.plan.stage_list import missing_model_dir
from disagg.redact import redact

MAX_RUN = 12  # values after one flag shown in full; longer runs are abridged
KEEP_HEAD, KEEP_TAIL = 6, 2
MAX_TOKEN = 200  # characters of one value shown (a long JSON map)


def abridged_argv(argv: list[str]) -> tuple[str, bool]:
    """The command shell-quoted, long value lists cut to their ends, and whether it was cut:
    a 512-entry `--cuda-graph-bs 1 2 ... 512` becomes `1 2 3 4 5 6 ... (500 more) ... 511 512`.
    """
    out: list[str] = []
    run: list[str] = []
    cut = False

    def flush() -> None:
        nonlocal cut
        cut = cut or len(run) > MAX_RUN
        out.extend(_abridged([shlex.quote(v) for v in run]))
        run.clear()

    for token in argv:
        if token.startswith("-") and not _number(token):
            flush()
            out.append(shlex.quote(token))
            continue
        if len(token) > MAX_TOKEN:
            token = f"{token[: MAX_TOKEN - 20]}...({len(token)} chars)"
            cut = True
        run.append(token)
    flush()
    return " ".join(out), cut


def _abridged(items: list[str]) -> list[str]:
    """`items`, a run longer than MAX_RUN cut to its ends."""
    if len(items) <= MAX_RUN:
        return items
    hidden = len(items) - KEEP_HEAD - KEEP_TAIL
    return [*items[:KEEP_HEAD], f"... ({hidden} more) ...", *items[-KEEP_TAIL:]]


def _number(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _span(numbers: list[int]) -> str:
    """Node ranks or GPU ids: a consecutive run as `0-3`, else listed (`0,2`)."""
    if len(numbers) > 1 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ",".join(map(str, numbers))


def _gpus(role: RolePlan) -> str:
    if not role.gpu_ids:
        return "-"
    total = f" ({role.total_gpus})" if role.nnodes > 1 else ""
    return f"{len(role.gpu_ids)} [{_span(role.gpu_ids)}]{total}"


def _points(plan: Plan) -> str:
    parts = []
    if plan.bench.command is not None:
        listed = " ".join(str(c) for c in plan.bench.concurrencies)
        return f"set by the command ($CONC_LIST={listed!r})" if listed else "set by the command"
    for point in plan.bench.points:
        if point.label is not None:
            parts.append(point.label)
        elif point.request_rate is not None:
            rate = f"{point.request_rate:g} req/s"
            parts.append(f"{rate} @ c={point.concurrency}" if point.concurrency else rate)
        else:
            parts.append(str(point.concurrency) if point.concurrency else "unbounded")
    return ", ".join(_abridged(parts)) or "-"


def _trace(plan: Plan) -> list[tuple[str, str]]:
    """Where a replayed trace is read, and so when it is checked."""
    trace = plan.bench.trace
    if trace is None:
        return []
    if trace.at_run_time:
        where = (
            f"{trace.written or trace.path} (on the cluster at {trace.path}, not on "
            "this machine): read and checked by the job before load starts; request "
            "count and lengths come from the trace at run time"
        )
    else:
        count = plan.bench.points[0].num_prompts if plan.bench.points else 0
        where = f"{trace.path}: {count} request(s), read and checked when planning"
    return [("trace", where)]


def _dataset(plan: Plan) -> list[tuple[str, str]]:
    """Where an evaluation disagg runs itself reads its data (checked in the job)."""
    command = plan.bench.command
    if command is None or command.dataset is None:
        return []
    return [("data", f"{command.dataset}: read by the evaluator in the job, never downloaded")]


def _models(plan: Plan) -> str:
    staging = plan.staging
    listed = [f"{m.repo_id} ({m.purpose})" for m in staging.models]
    if staging.local_path:
        missing = "; no such directory on this machine: `disagg submit` refuses it"
        note = missing if missing_model_dir(staging) else ""
        listed.insert(0, f"{staging.local_path} (local{note})")
    text = ", ".join(listed) or "-"
    return f"{text} [not staged: simulated]" if staging.skip else text


def _limits(plan: Plan) -> str:
    """The time limits after start-up (`limits:`), in seconds."""
    limits = plan.limits

    def shown(value: float | None) -> str:
        return "none" if value is None else f"{value:g}s"

    client = (
        f"request {shown(limits.request_timeout_s)}, stall {shown(limits.stall_timeout_s)}, "
        f"point {shown(limits.point_timeout_s)}, "
        if limits.client_limits
        else "request/stall/point: not applied (the benchmark command is its own client), "
    )
    return (
        f"{client}run {shown(limits.run_timeout_s)}, "
        f"liveness {shown(limits.liveness_timeout_s)}, "
        f"serving gap {shown(limits.serving_gap_s)}"
    )


def _summary(plan: Plan) -> list[tuple[str, str]]:
    """(label, value) rows of the variant's summary."""
    kind = "disaggregated" if plan.disaggregated else "aggregated"
    engine = f"{plan.engine} (simulated)" if plan.simulated else plan.engine
    if plan.emulates:
        engine = f"{plan.engine} (emulating {plan.emulates})"
    if plan.role_engines:
        own = ", ".join(f"{role}: {name}" for role, name in plan.role_engines.items())
        engine = f"{engine} ({own})"
    start = " -> ".join(", ".join(stage) for stage in plan.stages)
    serving = f"; load to {plan.serving_role}" if plan.serving_role else ""
    gpus = f"{plan.nodes} x {plan.gpus_per_node} GPUs; uses {plan.total_gpus}"
    if plan.disaggregated:
        gpus += f" (prefill {plan.prefill_gpus}, decode {plan.decode_gpus})"
    rows = [
        ("recipe", f"{plan.name}  {plan.selector}"),
        ("engine", f"{engine}, {kind}"),
        ("frontend", f"{plan.frontend}{serving}" + (f"; start {start}" if start else "")),
    ]
    if plan.simulator:
        rows.append(("simulated by", plan.simulator))
    if plan.predicted:
        rows.append(("timed by", str(plan.predicted.get("label"))))
    rows += [
        ("nodes", gpus),
        ("benchmark", plan.bench.type),
        ("concurrency", _points(plan)),
        *_trace(plan),
        *_dataset(plan),
        ("models", _models(plan)),
        ("limits", _limits(plan)),
    ]
    slowed = plan.bench.slow_down
    if slowed is not None:
        posts = (
            f'each point after its warm-up: POST {{"forward_sleep_time": {slowed.sleep_s}}} '
            f'to {", ".join(slowed.urls)}; {{"forward_sleep_time": null}} after {slowed.wait_s}s '
            "or at the point's end"
        )
        rows.append(("slow down", posts))
    rows += _profiling(plan)
    if plan.slurm.het_nodes:
        parts = " + ".join(map(str, plan.slurm.het_nodes))
        rows.append(("slurm", f"heterogeneous job of {parts} nodes (#SBATCH hetjob)"))
    if plan.slurm.container_image:
        rows.append(("container", _containers(plan, plan.slurm.container_image)))
    setup = plan.host_setup
    if setup is not None:
        what = f"{len(setup.commands)} command(s), {len(setup.teardown)} teardown"
        ranks = ", ".join(map(str, setup.node_ranks))
        rows.append(("host setup", f"{what} on node rank(s) {ranks}, on the bare host"))
    if plan.ignored:
        listed = "; ".join(f"{item['field']} ({item['why']})" for item in plan.ignored)
        rows.append(("ignored", listed))
    return rows


def _profiling(plan: Plan) -> list[tuple[str, str]]:
    """The recipe's `profiling:`: where traces go, and the benchmark's start/stop POSTs."""
    section = plan.config.get("profiling")
    kind = section.get("type") if isinstance(section, dict) else None
    if not plan.profile_dirs or not kind:
        return []
    text = f"{kind}, traces in {', '.join(plan.profile_dirs)}"
    if plan.simulated:
        text = f"{kind}, simulated: no profiler runs"
    posts = plan.bench.profiling
    if posts is not None:
        shown = ", ".join(f"{t.role} (steps {t.start_step}+{t.num_steps})" for t in posts.targets)
        text += f"; start POSTed to {shown} before the first point, stop after the last"
    return [("profiling", text)]


def _containers(plan: Plan, image: str) -> str:
    """The job's image, then each worker kind that runs in its own (`roles.<role>.container`)."""
    own: dict[str, str] = {}
    for role in plan.roles:
        if role.kind in WORKER_KINDS and role.container_image not in (None, image):
            own.setdefault(role.kind.value, str(role.container_image))
    return "; ".join([image, *(f"{kind} in {shown}" for kind, shown in own.items())])


def _role_rows(plan: Plan) -> list[tuple[str, ...]]:
    header = ("role", "nodes", "GPUs", "ports")
    rows = [(r.name, _span(r.node_ranks), _gpus(r), " ".join(r.ports) or "-") for r in plan.roles]
    return [header, *rows]


def _notes(role: RolePlan, cut: bool) -> list[str]:
    """What a role's command line does not show, one line each."""
    if role.kind is RoleKind.BENCH:  # the load's own settings, shown (secrets redacted)
        notes = [f"{k}={v}" for k, v in redact(dict(role.env)).items()]
    else:
        notes = [f"+{len(role.env)} env vars"] if role.env else []
    if cut:
        notes.append("abridged; `disagg plan --json` has the whole command")
    if role.node_argv:
        notes.append(f"nodes 1-{role.nnodes - 1} run their own argv (plan.json node_argv)")
    if role.mpi is not None:
        ranks = f"{role.nnodes} x {role.mpi.tasks_per_node}"
        notes.append(f"one MPI step ({role.mpi.mpi}) of {ranks} ranks")
    notes += [f"writes RUN_DIR/{name}" for name in role.files]
    return notes


def render_plan(plan: Plan, width: int) -> list[str]:
    """One variant as lines (typer styles; colour is dropped off a terminal): a title rule,
    the summary wrapped to `width`, the role table, then each role's command on a line of
    its own. A command is never wrapped, so that it pastes as it runs."""
    title = f"{plan.variant} "
    lines = [styled(title + "─" * max(width - len(title), 3), bold=True)]
    summary = _summary(plan)
    label_width = max(len(label) for label, _ in summary) + 2
    for label, value in summary:
        wrapped = textwrap.wrap(
            value, max(width - label_width, 20), break_long_words=False, break_on_hyphens=False
        ) or [""]
        lines.append(styled(label.ljust(label_width), bold=True) + wrapped[0])
        lines += [" " * label_width + more for more in wrapped[1:]]
    if plan.differs:  # a block of its own: its title is wider than the summary's labels
        lines.append(styled("differs from srt-slurm (why: docs/compat.md)", bold=True))
        for difference in plan.differs:
            text = f"[{difference['id']}] {difference['disagg']}"
            lines += textwrap.wrap(
                text,
                max(width - 2, 20),
                initial_indent="  ",
                subsequent_indent="    ",
                break_on_hyphens=False,
            )
    table = _role_rows(plan)
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    lines.append("")
    for n, row in enumerate(table):
        cells = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        lines.append(styled(cells, bold=True) if n == 0 else cells)
    lines.append("")
    for role in plan.roles:
        command, cut = (
            abridged_argv(redact(role.argv))
            if role.argv
            else ("(in-process load generator, orchestrator)", False)
        )
        lines.append(styled(role.name, fg="cyan", bold=True) + ": " + command)
        lines += ["  " + styled(note, dim=True) for note in _notes(role, cut)]
    lines.append("")
    return lines


def print_plans(plans: list[Plan]) -> None:
    """Every variant, then the GPU total; 80 columns off a terminal (COLUMNS is honoured).
    Nothing when nothing was planned: the errors on stderr say why."""
    if not plans:
        return
    width = shutil.get_terminal_size((80, 24)).columns
    for plan in plans:
        typer.echo("\n".join(render_plan(plan, width)))
    total = sum(plan.total_gpus for plan in plans)
    typer.echo(styled(f"{len(plans)} variant(s), {total} GPUs in total", dim=True))
