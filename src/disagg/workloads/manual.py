"""`manual`: the job keeps the servers up with no benchmark step, as srtctl does.

The bench role prints the public URL and waits; the liveness watch fails the run when a
role dies, and `disagg cancel` (or the time limit) ends it. No point is expected.
"""

from __future__ import annotations

from disagg.plan.model import BenchCommand, BenchPlan
from disagg.workloads.base import BenchInputs, BenchmarkAdapter, command_plan
from disagg.workloads.contract import RESULTS_DIR

HOLD = (
    'echo "benchmark type manual: the servers are up at ${SRT_FRONTEND_URL:-?}; '
    'stop the job (disagg cancel) when done"; exec sleep infinity'
)


class Manual(BenchmarkAdapter):
    types = ("manual",)
    reads = frozenset()

    def ignore_reason(self, name: str) -> str | None:
        """Every load field is ignored: no benchmark runs (srtctl reads none of them either)."""
        return "benchmark type manual runs no benchmark (srtctl does not read it either)"

    def plan(self, inputs: BenchInputs) -> BenchPlan:
        ignored = self.check_fields(inputs)
        return command_plan(
            inputs,
            BenchCommand(
                argv=["bash", "-c", HOLD],
                results_dir=RESULTS_DIR,
                expects_results=False,
            ),
            ignored,
        )
