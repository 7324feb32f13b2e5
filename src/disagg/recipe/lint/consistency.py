"""DA005-DA008: per-variant sanity of roles, GPUs, concurrency points and models to stage.

These catch recipes that load but cannot run as written: an engine given more (or
fewer) GPUs than its worker gets, workers that do not divide their nodes, a bad
concurrency list, or roles naming different draft repos (one is staged per variant).
Engine settings are read through the engine adapters, as the plan reads them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from disagg.cluster import is_repo_id
from disagg.engines import registry
from disagg.engines.base import EngineAdapter
from disagg.engines.worker import Parallelism, WorkerRole, WorkerSpec, as_int
from disagg.recipe.benchmark_section import concurrency_points
from disagg.recipe.lint.context import FileContext
from disagg.recipe.lint.model import Finding, Location, Rule, Severity

PARALLELISM = Rule("DA005", "parallelism-vs-gpus")
LAYOUT = Rule("DA006", "workers-vs-nodes")
CONCURRENCY = Rule("DA007", "concurrency-list")
DRAFT = Rule("DA008", "draft-model-not-staged")

# resources prefix -> engine config section
ROLES = {"prefill": "prefill", "decode": "decode", "agg": "aggregated"}
# Settings whose written keys DA005 points at.
_PARALLEL_SETTINGS = ("tp", "dp", "ep", "pp")


@dataclass(frozen=True, slots=True)
class _Role:
    name: str  # prefill | decode | agg
    nodes: int
    workers: int
    gpus_per_node: int
    gpus_per_worker: int | None  # explicit gpus_per_<role>, else derived
    args: Mapping[str, Any]
    args_path: tuple[str, ...]


def _engine(config: Mapping[str, Any]) -> str:
    backend = config.get("backend")
    kind = backend.get("type") if isinstance(backend, Mapping) else None
    return str(kind) if kind else "sglang"


def _roles(config: Mapping[str, Any]) -> Iterator[_Role]:
    resources = config.get("resources")
    backend = config.get("backend")
    if not isinstance(resources, Mapping):
        return
    engine = _engine(config)
    adapter = registry.get(engine)
    section = adapter.config_section if adapter is not None else f"{engine}_config"
    engine_config = backend.get(section) if isinstance(backend, Mapping) else None
    per_node = as_int(resources.get("gpus_per_node"))
    for prefix, config_name in ROLES.items():
        nodes = as_int(resources.get(f"{prefix}_nodes"))
        workers = as_int(resources.get(f"{prefix}_workers"))
        if nodes is None and workers is None:
            continue
        args = engine_config.get(config_name) if isinstance(engine_config, Mapping) else None
        yield _Role(
            name=prefix,
            nodes=nodes if nodes is not None else 1,
            workers=workers if workers is not None else 1,
            gpus_per_node=per_node or 0,
            gpus_per_worker=as_int(resources.get(f"gpus_per_{prefix}")),
            args=args if isinstance(args, Mapping) else {},
            args_path=("backend", section, config_name),
        )


@dataclass
class _Checker:
    ctx: FileContext
    found: dict[tuple[str, str, str], tuple[Finding, list[str]]] = field(default_factory=dict)
    variant: str = ""  # the one being checked

    def named(self, key: str) -> str:
        """`resources.<key>` as the file spells it: the bare key in v1 (`prefill_workers`),
        the role field in schema 2 (`roles.prefill.workers`)."""
        name = self.ctx.written_name(self.variant, f"resources.{key}")
        return key if name == f"resources.{key}" else name

    def loc(self, path: tuple[str, ...], role: str) -> Location:
        return self.ctx.at(self.variant, path, role)

    def add(
        self,
        rule: Rule,
        severity: Severity,
        message: str,
        locations: list[Location],
        hint: str,
    ) -> None:
        """One finding per place and message, listing every variant that shares it."""
        key = (rule.code, str(locations[0]), message)
        if key not in self.found:
            self.found[key] = (rule.finding(severity, message, tuple(locations), hint), [])
        self.found[key][1].append(self.variant)

    def findings(self) -> list[Finding]:
        return [
            replace(finding, message=f"{finding.message} [variants: {', '.join(variants)}]")
            for finding, variants in self.found.values()
        ]

    def role_layout(self, role: _Role, shared: bool) -> int | None:
        """Check workers vs nodes; return the GPUs each worker gets when that is well defined.
        `shared`: roles share nodes (a `<role>_nodes: 0`), so the pool is checked as a whole."""
        res = ("resources",)
        total = role.nodes * role.gpus_per_node
        where = [
            self.loc((*res, f"{role.name}_workers"), "workers"),
            self.loc((*res, f"{role.name}_nodes"), "nodes"),
        ]
        if role.workers <= 0 or role.nodes < 0 or (role.nodes == 0 and not shared):
            self.add(
                LAYOUT,
                Severity.ERROR,
                f"{role.name}: {role.workers} worker(s) on {role.nodes} node(s); both must be >= 1",
                where,
                f"set {self.named(f'{role.name}_workers')} and "
                f"{self.named(f'{role.name}_nodes')} to positive counts",
            )
            return None
        if role.gpus_per_node <= 0 or shared:
            return role.gpus_per_worker
        if role.gpus_per_worker is None:
            if total % role.workers:
                self.add(
                    LAYOUT,
                    Severity.ERROR,
                    f"{role.name}: {role.workers} workers cannot split {role.nodes} node(s) x "
                    f"{role.gpus_per_node} GPUs evenly",
                    where,
                    f"make {self.named(f'{role.name}_workers')} divide {total}, "
                    f"or set {self.named(f'gpus_per_{role.name}')}",
                )
                return None
            return total // role.workers
        per = role.gpus_per_worker
        where.append(self.loc((*res, f"gpus_per_{role.name}"), "gpus_per_worker"))
        if per <= 0 or (
            role.gpus_per_node % per if per <= role.gpus_per_node else per % role.gpus_per_node
        ):
            self.add(
                LAYOUT,
                Severity.ERROR,
                f"{role.name}: {self.named(f'gpus_per_{role.name}')}={per} neither "
                f"divides nor is a multiple of gpus_per_node={role.gpus_per_node}",
                where,
                "a worker uses a whole number of nodes, or several workers share one node",
            )
            return None
        self.capacity([role], {role.name: per}, where)
        return per

    def capacity(self, roles: list[_Role], per: dict[str, int], where: list[Location]) -> None:
        """The workers' GPUs must fit the roles' nodes; unused GPUs are worth a note."""
        need = sum(r.workers * per[r.name] for r in roles)
        total = sum(r.nodes for r in roles) * roles[0].gpus_per_node
        names = "+".join(r.name for r in roles)
        detail = " + ".join(f"{r.workers} x {per[r.name]}" for r in roles)
        if need > total:
            self.add(
                LAYOUT,
                Severity.ERROR,
                f"{names}: workers need {detail} = {need} GPUs, but "
                f"{sum(r.nodes for r in roles)} node(s) x {roles[0].gpus_per_node} give only "
                f"{total}",
                where,
                "add nodes or lower the worker count",
            )
        elif need < total:
            self.add(
                LAYOUT,
                Severity.INFO,
                f"{names}: workers use {detail} = {need} of {total} allocated GPUs",
                where,
                "lower the node count if the idle GPUs are not intended",
            )

    def shared_pool(self, adapter: EngineAdapter | None, roles: list[_Role]) -> None:
        """Co-located roles: per-worker GPUs from gpus_per_<role> or the engine's parallelism."""
        per: dict[str, int] = {}
        for role in roles:
            if role.gpus_per_worker is not None:
                per[role.name] = role.gpus_per_worker
            else:
                found = _parallel(adapter, role)
                if found is None:
                    return
                per[role.name] = found[0].gpus
        where = [self.loc(("resources", f"{r.name}_nodes"), "nodes") for r in roles]
        if roles[0].gpus_per_node > 0:
            self.capacity(roles, per, where)

    def parallelism(self, adapter: EngineAdapter, role: _Role, gpus: int | None) -> None:
        found = _parallel(adapter, role, gpus)
        if found is None:
            return
        par, keys = found
        engine = adapter.name
        tp_n, dp_n, pp_n, world = par.tp, par.dp, par.pp, par.gpus
        ep_n = par.ep if adapter.flags.find(role.args, "ep") else 1  # vLLM's EP spans every rank
        where = [self.loc((*role.args_path, k), k) for k in keys]
        where.append(self.loc(("resources", f"{role.name}_nodes"), "nodes"))
        shown = ", ".join(f"{k}={role.args[k]}" for k in keys) or "no parallelism args (1 GPU)"
        if gpus is not None and world != gpus:
            formula = f"tp {tp_n} x pp {pp_n}" + (f" x dp {dp_n}" if world > tp_n * pp_n else "")
            self.add(
                PARALLELISM,
                Severity.ERROR if world > gpus else Severity.WARNING,
                f"{role.name} ({engine}): {shown} needs {formula} = {world} GPUs per worker, "
                f"but each worker gets {gpus}" + (" (the rest stay idle)" if world < gpus else ""),
                where,
                "make the parallel sizes multiply to the worker's GPUs "
                "(nodes x gpus_per_node / workers, or gpus_per_<role>)",
            )
        if par.dp_attention and dp_n > 1 and tp_n % dp_n:
            self.add(
                PARALLELISM,
                Severity.ERROR,
                f"{role.name} ({engine}): with DP attention the data-parallel size {dp_n} must "
                f"divide the tensor-parallel size {tp_n}",
                where,
                "pick a dp size that divides tp",
            )
        if ep_n > 1 and (ep_n > tp_n * pp_n or (tp_n * pp_n) % ep_n):
            self.add(
                PARALLELISM,
                Severity.ERROR,
                f"{role.name} ({engine}): expert-parallel size {ep_n} must divide the "
                f"{tp_n * pp_n} ranks of the worker",
                where,
                "use an expert-parallel size that divides tp x pp",
            )

    def concurrency(self, config: Mapping[str, Any]) -> None:
        bench = config.get("benchmark")
        if not isinstance(bench, Mapping) or "concurrencies" not in bench:
            return
        raw = bench["concurrencies"]
        where = [self.loc(("benchmark", "concurrencies"), "concurrencies")]

        def found(severity: Severity, message: str) -> None:
            hint = 'list each concurrency once, ascending, e.g. [1, 4, 16] or "1x4x16"'
            self.add(CONCURRENCY, severity, message, where, hint)

        try:
            points = concurrency_points(raw)
        except ValueError as exc:
            message = f"benchmark.concurrencies {raw!r} is not a list of positive integers: {exc}"
            found(Severity.ERROR, message)
            return
        if not points:
            found(Severity.ERROR, "benchmark.concurrencies is empty")
            return
        if len(set(points)) != len(points):
            dups = sorted({p for p in points if points.count(p) > 1})
            found(Severity.WARNING, f"benchmark.concurrencies {raw!r} repeats {dups}")
        if points != sorted(points):
            found(Severity.WARNING, f"benchmark.concurrencies {raw!r} is not in ascending order")

    def one_draft(self, adapter: EngineAdapter, roles: list[_Role]) -> None:
        """The plan stages one draft repo per variant (bound as ${model.draft})."""
        drafts = {r.name: d for r in roles if (d := _staged_draft(adapter, r))}
        if len(set(drafts.values())) < 2:
            return
        self.add(
            DRAFT,
            Severity.ERROR,
            "roles name different draft model repos ("
            + ", ".join(f"{name}: {repo}" for name, repo in drafts.items())
            + "); only one draft model is staged per variant",
            [
                self.loc((*r.args_path, _draft_key(adapter, r)), _draft_key(adapter, r))
                for r in roles
                if r.name in drafts
            ],
            "use the same draft model in every role, or local paths",
        )


def _colocated(
    config: Mapping[str, Any], adapter: EngineAdapter | None, roles: list[_Role]
) -> dict[str, int] | None:
    """GPUs per worker of each role when an engine that colocates (vLLM) packs prefill and
    decode together, else None: srt-slurm then sizes the job from the workers' GPUs alone,
    so node counts cannot be too small (`disagg.plan.node_layout.Colocation`)."""
    backend = config.get("backend")
    if adapter is None or not adapter.colocates or not isinstance(backend, Mapping):
        return None
    found = {r.name: r for r in roles}
    prefill, decode = found.get("prefill"), found.get("decode")
    if backend.get("allow_prefill_decode_colocation") is not True or not prefill or not decode:
        return None
    gpn = prefill.gpus_per_node
    if gpn <= 0 or prefill.workers <= 0 or decode.workers <= 0:
        return None
    per = {"prefill": _srt_gpus_each(prefill)}
    per["decode"] = (
        per["prefill"]
        if decode.nodes == 0 and decode.gpus_per_worker is None
        else _srt_gpus_each(decode)
    )
    total = prefill.workers * per["prefill"] + decode.workers * per["decode"]
    across = backend.get("allow_prefill_decode_colocation_across_nodes") is True
    return per if total <= gpn or across else None


def _srt_gpus_each(role: _Role) -> int:
    """srt-slurm's GPUs per worker: the explicit count, else the role's GPUs shared out."""
    if role.gpus_per_worker is not None:
        return role.gpus_per_worker
    if role.nodes and role.workers:
        return max(role.nodes * role.gpus_per_node // role.workers, 1)
    return role.gpus_per_node


def _staged_draft(adapter: EngineAdapter, role: _Role) -> str | None:
    draft = adapter.draft_model(role.args)
    return draft.removeprefix("hf:") if draft and is_repo_id(draft) else None


def _parallel(
    adapter: EngineAdapter | None, role: _Role, gpus: int | None = None
) -> tuple[Parallelism, list[str]] | None:
    """The adapter's reading of a role's parallel layout and the keys it read; with `gpus`,
    as it lays out a worker given them (ATOM sizes TP so)."""
    if adapter is None or not adapter.uses_gpus:
        return None
    keys = [hit[0] for s in _PARALLEL_SETTINGS if (hit := adapter.flags.find(role.args, s))]
    if gpus is None:
        return adapter.parallelism(role.args), keys
    kind: WorkerRole = "aggregated" if role.name == "agg" else role.name  # type: ignore[assignment]
    spec = WorkerSpec(role=kind, served_name="", gpus_per_node=gpus)
    return adapter.worker_parallelism(role.args, spec), keys


def _draft_key(adapter: EngineAdapter, role: _Role) -> str:
    hit = adapter.flags.find(role.args, "draft_model")
    return hit[0] if hit else "speculative"


def check(ctx: FileContext) -> list[Finding]:
    checker = _Checker(ctx)
    for variant, config in ctx.runnable.items():
        checker.variant = variant
        adapter = registry.get(_engine(config))
        roles = [r for r in _roles(config) if r.workers or r.nodes]
        shared = any(r.nodes == 0 for r in roles) and any(r.nodes > 0 for r in roles)
        packed = _colocated(config, adapter, roles)
        for role in roles:
            gpus = checker.role_layout(role, shared or packed is not None)
            if packed is not None:
                gpus = packed[role.name]
            if adapter is not None:
                checker.parallelism(adapter, role, gpus)
        if shared and roles and packed is None:
            checker.shared_pool(adapter, roles)
        if adapter is not None:
            checker.one_draft(adapter, roles)
        checker.concurrency(config)
    return checker.findings()
