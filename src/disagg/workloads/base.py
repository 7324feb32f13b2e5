"""The benchmark seam: what every `benchmark.type` adapter owns.

An adapter names the recipe fields it reads (any other set field is refused at plan
time, or listed as ignored with why), makes the plan's `BenchPlan` and bench role, and
runs either as in-process points, each sent by the one driver (`disagg.bench.runner`)
from what its `requests` makes, or as a command in the bench role (`command` set), whose
output `collect` turns into point results.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from disagg.errors import DisaggError, Fail, UnsupportedRecipe
from disagg.plan.container_paths import mount_pairs
from disagg.plan.model import BenchCommand, BenchPlan, Plan, PointPlan, RoleKind, RolePlan
from disagg.recipe.benchmark_section import BenchmarkSection

if TYPE_CHECKING:
    from disagg.bench.runner import PointDriver, PointRequests

# The client's node (placement.py lays it out as srtctl does, for every benchmark type).
COMMON_FIELDS = frozenset(
    {"type", "client_placement", "client_dedicated_node", "colocate_with_frontend"}
)
# Fields any adapter accepts without effect, with why.
COMMON_IGNORES = {
    "stream_output": "the client's output always goes to the bench role's log, which "
    "`disagg logs --follow` shows while it runs",
}


@dataclass(frozen=True)
class BenchInputs:
    """What an adapter may use at plan time besides the `benchmark:` section."""

    section: BenchmarkSection
    model_name: str  # the served model name requests carry
    simulated: bool
    recipe_dir: Path  # relative paths in the section (a trace file) resolve against it
    fail: Fail  # a positioned plan error: (message, field path, hint)
    resolve_container: Callable[[str], str]  # cluster-profile alias -> image reference
    # Container mounts, host path -> path inside: a file named by its path inside a
    # container (a trace under `extra_mount`) is read at plan time from the host side.
    mounts: Mapping[str, str] = field(default_factory=dict)
    # `backend.type` as written (even when simulated): srtctl picks some clients by it.
    engine: str = ""
    # `frontend.type` as read (schema 2's `sglang-router` is `sglang` here): srtctl
    # gates some client behaviour on it (sa-bench's /slow_down).
    frontend: str = ""

    def image(self) -> str | None:
        """`benchmark.container_image` as an image reference (aliases resolved), or None."""
        written = self.section.container_image
        return self.resolve_container(written) if written else None

    def host_side(self, path: Path) -> tuple[Path, Path] | None:
        """(mount's host side, `path` there) for a path inside a container mount, read as
        placement reads mounts (a pyxis option such as `:ro` is no part of the path), the
        most specific container side first; None when no mount holds it."""
        for host, inside in sorted(mount_pairs(self.mounts), key=lambda pair: -len(pair[1])):
            if path.is_relative_to(inside):
                return Path(host), Path(host) / path.relative_to(inside)
        return None


def command_plan(inputs: BenchInputs, command: BenchCommand, ignored: dict[str, str]) -> BenchPlan:
    """The BenchPlan of a benchmark that is one command in the bench role: no points or
    lengths of disagg's own; the command's results decide the run."""
    return BenchPlan(
        type=inputs.section.type,
        model_name=inputs.model_name,
        isl=0,
        osl=0,
        points=[],
        command=command,
        ignored=ignored,
    )


class BenchmarkAdapter(ABC):
    """One `benchmark.type` (or several spellings of one client)."""

    types: ClassVar[tuple[str, ...]]
    reads: ClassVar[frozenset[str]]  # benchmark.<field> names this adapter honours
    # benchmark.<field> -> why it is accepted but has no effect here (shown in the plan)
    ignores: ClassVar[Mapping[str, str]] = {}
    # Ids of `disagg.plan.compat` rows: where this client differs from srtctl's on purpose.
    differs: ClassVar[tuple[str, ...]] = ()

    def check_fields(self, inputs: BenchInputs) -> dict[str, str]:
        """Refuse a set field nobody reads; return the ignored ones with their reasons."""
        section = inputs.section
        ignored: dict[str, str] = {}
        for name in sorted(section.model_fields_set):
            value = getattr(section, name)
            if value is None or name in COMMON_FIELDS or name in self.reads:
                continue
            if value == type(section).model_fields[name].get_default(call_default_factory=True):
                continue
            why = self.ignore_reason(name)
            if why is not None:
                ignored[name] = why
                continue
            raise UnsupportedRecipe(
                f"benchmark.{name} (benchmark.type {section.type} does not read it)"
            )
        return ignored

    def ignore_reason(self, name: str) -> str | None:
        """Why a set `benchmark.<name>` this adapter does not read is only ignored, or None
        when it must be refused."""
        return self.ignores.get(name) or COMMON_IGNORES.get(name)

    @abstractmethod
    def plan(self, inputs: BenchInputs) -> BenchPlan:
        """The BenchPlan for this section; bad values raise `inputs.fail(...)`."""

    def complete(self, plan: Plan) -> BenchPlan:
        """The BenchPlan once the workers are placed (an adapter that targets workers by
        role fills them in here); by default `plan.bench` unchanged."""
        return plan.bench

    def differs_for(self, bench: BenchPlan) -> tuple[str, ...]:
        """The compat rows this planned benchmark hits (by default the adapter's own)."""
        return self.differs

    def bench_role(self, plan: Plan) -> RolePlan:
        """The bench role on node 0 of a plan placed without one: a command benchmark's
        command (`disagg.workloads.contract`); in-process points have no command."""
        if plan.bench.command is not None:
            from disagg.workloads.contract import command_role

            return command_role(plan)
        return RolePlan(name="bench", kind=RoleKind.BENCH, node_ranks=[0])

    def requests(self, bench: BenchPlan, point: PointPlan) -> PointRequests:
        """What one in-process point sends; the one driver (`measure`) does the rest."""
        raise DisaggError(f"benchmark.type {self.types[0]} measures no in-process points")

    def measure(self) -> PointDriver:
        """The per-point measurement of in-process adapters: the driver with `requests`."""
        from disagg.bench.runner import PointDriver

        return PointDriver(self.requests)

    def prepare(self, bench: BenchPlan) -> None:  # noqa: B027 - optional hook
        """Checks made inside the job before any role starts (e.g. the trace file parses)."""

    def resolve(self, bench: BenchPlan) -> BenchPlan:
        """The bench plan the job measures, made inside the job before any role starts:
        `prepare`'s checks, then what the plan left to run time (a trace on the cluster)."""
        self.prepare(bench)
        return bench
