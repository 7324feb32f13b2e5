"""What a generic or mooncake-store entry asks that its role (disagg.services) does not do.

Read by `disagg.recipe.honoured` from the variant as written: a field that would change
what runs is refused (`unsupported: services.<name>.<field>`), one that only concerns
how Slurm pins or scrapes the process is listed as ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from disagg.recipe.honoured import Unhonoured

_REFUSED = {
    "terminal": "a terminal service (the service is the run, no benchmark) is not run: "
    "every disagg run measures its benchmark",
    "source": "the service's git source is not cloned and built",
    "build_command": "the service's git source is not cloned and built",
    "nodes": "services owning node pools are not laid out (the job has only role nodes)",
    "external": "`external` is for the discovery-plane kinds and the Mooncake master",
    "options": "this kind takes no options",
}
_IGNORED = {
    "cpus_per_task": "a service's own srun options are not applied",
    "cpu_bind": "a service's own srun options are not applied",
    "srun_options": "a service's own srun options are not applied",
    "metrics": "no metrics scraping",
}


def unhonoured_service(name: str, service: Mapping[str, Any]) -> list[Unhonoured]:
    """The entry's fields its role does not carry out, in a fixed order."""
    found = []
    for key, why in _REFUSED.items():
        if service.get(key):
            found.append(Unhonoured(("services", name, key), "refused", why))
    placement = service.get("placement")
    if isinstance(placement, Mapping):
        if placement.get("pool"):
            why = "services owning node pools are not laid out, so no pool to join"
            found.append(Unhonoured(("services", name, "placement", "pool"), "refused", why))
        if placement.get("per") == "worker":
            why = "one instance per worker (a sidecar on its GPUs) is not laid out"
            found.append(Unhonoured(("services", name, "placement", "per"), "refused", why))
    for key, why in _IGNORED.items():
        if service.get(key):
            found.append(Unhonoured(("services", name, key), "ignored", why))
    return found
