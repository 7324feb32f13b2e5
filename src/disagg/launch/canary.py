"""The canary: one request through the serving endpoint before any point is measured.

A server error or a dropped connection is tried again: a cold disaggregated deployment
can fail its very first request once (vLLM's first NIXL handshake).
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from disagg.errors import DisaggError
from disagg.launch.logs import first_error_line, log_sizes, task_log_path
from disagg.launch.run_context import RunContext, Stop
from disagg.plan.model import BenchPlan, RoleKind

CANARY_ATTEMPTS = 3
CANARY_RETRY_WAIT_S = 2.0
# Server errors a cold deployment gives once (a first NIXL handshake timing out, a pooled
# connection closed); a 4xx, a timeout or a malformed answer is the same on every try.
TRANSIENT_HTTP = frozenset({500, 502, 503, 504})


@dataclass(frozen=True)
class CanaryResult:
    ok: bool
    detail: str  # the completion text, or the server's answer when it failed
    transient: bool = False  # a failure another try may not repeat


def canary(base_url: str, bench: BenchPlan, *, timeout_s: float = 60.0) -> CanaryResult:
    """One tiny non-streaming completion (max_tokens 4) through the serving endpoint."""
    if bench.endpoint == "chat":
        path = "/v1/chat/completions"
        body: dict[str, object] = {"messages": [{"role": "user", "content": "Hello"}]}
    else:
        path = "/v1/completions"
        body = {"prompt": "Hello"}
    body.update({"model": bench.model_name, "max_tokens": 4, "stream": False})
    request = urllib.request.Request(
        base_url.rstrip("/") + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read(64 * 1024)
    except urllib.error.HTTPError as exc:
        answer = exc.read(2048).decode("utf-8", errors="replace").strip()
        detail = f"HTTP {exc.code} from {base_url}{path}: {answer}"
        return CanaryResult(False, detail, transient=exc.code in TRANSIENT_HTTP)
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        dropped = isinstance(exc, ConnectionError) or isinstance(reason, ConnectionError)
        return CanaryResult(False, f"no answer from {base_url}{path}: {reason}", transient=dropped)
    try:
        first = json.loads(raw)["choices"][0]
        text = first.get("text") or (first.get("message") or {}).get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        snippet = raw[:300].decode("utf-8", errors="replace")
        return CanaryResult(False, f"unexpected answer from {base_url}{path}: {snippet}")
    return CanaryResult(True, str(text))


def serving_url(run: RunContext) -> str:
    """Where load goes: the plan's serving role, else a router, aggregated or decode worker."""
    if run.plan.serving_role is not None:
        return run.bindings[run.plan.serving_role]["url"]
    for kind in (RoleKind.ROUTER, RoleKind.AGGREGATED, RoleKind.DECODE):
        for role in run.plan.roles_of(kind):
            url = run.bindings.get(role.name, {}).get("url")
            if url:
                return url
    raise DisaggError("the plan has no router or worker with an http port to send load to")


def run_canary(run: RunContext) -> None:
    """The canary, tried up to CANARY_ATTEMPTS times; a failure names the first role whose
    log recorded an error meanwhile, with that log's last lines."""
    url = serving_url(run)
    logs = _role_logs(run)
    sizes = log_sizes(list(logs))
    for attempt in range(1, CANARY_ATTEMPTS + 1):
        result = run.interruptible(lambda: canary(url, run.plan.bench))
        if result.ok:
            tries = f" (attempt {attempt} of {CANARY_ATTEMPTS})" if attempt > 1 else ""
            run.log.info("canary ok through %s%s: %r", url, tries, result.detail)
            return
        if not result.transient or attempt == CANARY_ATTEMPTS:
            break
        run.log.warning(
            "canary attempt %d of %d failed: %s; trying again in %.0f s",
            attempt,
            CANARY_ATTEMPTS,
            result.detail,
            CANARY_RETRY_WAIT_S,
        )
        if run.stop.wait(CANARY_RETRY_WAIT_S):
            raise Stop
    tries = f" ({attempt} attempts)" if attempt > 1 else ""
    reason = f"canary request failed{tries}: {result.detail}"
    for path, (role, rank) in logs.items():
        if line := first_error_line(path, sizes[path]):
            run.fail(f"{reason}; {role} logged: {line[:300]}", role=role, node_rank=rank)
            raise Stop
    run.fail(reason)
    raise Stop


def _role_logs(run: RunContext) -> dict[Path, tuple[str, int]]:
    """Every role's task log (one per node it spans) -> (role, node rank), in plan order."""
    found: dict[Path, tuple[str, int]] = {}
    for role in run.plan.roles:
        for rank in role.node_ranks or [0]:
            found[task_log_path(run.run_dir, role.name, rank, role.nnodes)] = (role.name, rank)
    return found
