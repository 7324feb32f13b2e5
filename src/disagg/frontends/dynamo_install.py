"""`dynamo.source` / `dynamo.version` / `dynamo.wheel`: Dynamo installed once per job.

The first Dynamo role to start installs the requested Dynamo with pip into the run
directory (on the shared filesystem) under a lock; every other role of the job, on any
node, finds it done and uses it through PYTHONPATH. A failed install leaves no marker,
so the role that tried exits non-zero and the run fails naming it.
"""

from __future__ import annotations

import shlex

from disagg.errors import DisaggError
from disagg.recipe.schema import DynamoSection

DEFAULT_VERSION = "1.6.1"  # the ai-dynamo this environment pins, and what a job installs
TARGET = "${run.dir}/dynamo-install"


def requirement(dynamo: DynamoSection) -> tuple[str | None, str | None]:
    """(pip requirement to install, or None; why nothing is installed, when not asked to)."""
    if not dynamo.install:
        return None, None
    source = dynamo.source
    if source is not None:
        if source.pypi:
            return _pypi(source.pypi), None
        if source.wheel:
            return source.wheel, None
        if source.git:
            # schema 2's `source.rev` arrives as v1's `dynamo.hash` (the dialect's mapping)
            rev = source.sha or source.rev or dynamo.hash
            if not rev:
                raise DisaggError(
                    "dynamo.source.git without a rev installs an unpinned Dynamo",
                    hint="pin a commit with dynamo.source.rev",
                )
            return f"ai-dynamo @ git+{source.git}@{rev}", None
    if dynamo.wheel:
        return dynamo.wheel, None
    if dynamo.hash or dynamo.top_of_tree:
        return None, "no repository to build it from is given; the container's Dynamo runs"
    return _pypi(dynamo.version or DEFAULT_VERSION), None


def _pypi(version: str) -> str:
    return version if version.startswith("ai-dynamo") else f"ai-dynamo=={version}"


def installing(argv: list[str], wanted: str) -> list[str]:
    """`argv` preceded by the once-per-job install of `wanted` (the first role does it)."""
    marker = f"{TARGET}/.installed"
    install = f"mkdir -p {TARGET} && flock {TARGET}.lock sh -c " + shlex.quote(
        f"[ -e {marker} ] || {{ python3 -m pip install --quiet --target {TARGET} "
        f"{shlex.quote(wanted)} && touch {marker}; }}"
    )
    return ["bash", "-c", f'{install} && exec "$@"', "dynamo-install", *argv]


def env() -> dict[str, str]:
    return {"PYTHONPATH": TARGET}
