"""Before a predicted run starts: every worker's model builds, or the run is refused.

A perf database may lack the measurements one configuration needs (a kernel, a
precision). That is found here, in seconds, with the worker and the reason, instead
of as a worker that exits after the frontend and the other workers have started.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from disagg.errors import DisaggError
from disagg.plan.model import Plan
from disagg.predict import require
from disagg.predict import target as predict_target
from disagg.predict.target import PredictTarget


def role_target(argv: Sequence[str]) -> PredictTarget | None:
    """The `--predict-*` flags of a worker's argv read back, None for any other role."""
    parser = argparse.ArgumentParser(add_help=False)
    predict_target.add_arguments(parser)
    ns, _ = parser.parse_known_args(list(argv))
    return predict_target.from_namespace(vars(ns))


def check_plans(plans: Sequence[Plan]) -> None:
    """Build each distinct worker model once; DisaggError (exit 2) names what fails."""
    from disagg.predict.timing import Engines, kv_capacity

    targets: dict[PredictTarget, str] = {}
    for plan in plans:
        for role in plan.roles:
            target = role_target(role.argv)
            if target is not None:
                targets.setdefault(target, f"{plan.selector} {role.name}")
    if targets:
        require()
    # AIConfigurator logs every fallback it takes at WARNING; the refusal says what matters.
    logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)
    for target, where in targets.items():
        try:
            Engines(target)
            kv_capacity(target)
        except DisaggError as exc:
            raise DisaggError(
                f"{where}: cannot predict this worker: {exc.message}",
                hint="docs/predict.md lists what the performance model covers",
            ) from None
