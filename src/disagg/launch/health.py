"""HTTP checks the orchestrator gates on: a role's health endpoint and the canary request.

Standard library only (no event loop to start), with short timeouts so that a
health poll never delays noticing that a role died.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from dataclasses import dataclass

from disagg.plan.model import BenchPlan


def probe(
    url: str, *, timeout_s: float = 1.0, expect: str | None = None, any_status: bool = False
) -> tuple[bool, str]:
    """GET `url`: (True, "") on HTTP 200 (whose body holds `expect`, when given), else
    (False, what happened). With `any_status`, a body holding `expect` counts whatever
    the status (an answer that reports its parts' states, ready or not)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            status, body = response.status, response.read(64 * 1024)
    except urllib.error.HTTPError as exc:
        if not any_status:
            return False, f"HTTP {exc.code}"
        status, body = exc.code, exc.read(64 * 1024)
    except (OSError, http.client.HTTPException) as exc:
        return False, str(getattr(exc, "reason", exc))
    if expect is not None and expect.encode() not in body:
        return False, f"HTTP {status} without {expect!r} yet"
    if any_status and expect is not None:
        return True, f"HTTP {status}"
    return status == 200, f"HTTP {status}"


# Answers a cold deployment gives once and not again: a server error (vLLM's first NIXL
# handshake timing out, a router's pooled connection closed under it), or a dropped
# connection. A 4xx (wrong model name, bad request), a timeout or a malformed answer is
# the same on every try.
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
        choices = json.loads(raw)["choices"]
        first = choices[0]
        text = first.get("text") or (first.get("message") or {}).get("content") or ""
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        snippet = raw[:300].decode("utf-8", errors="replace")
        return CanaryResult(False, f"unexpected answer from {base_url}{path}: {snippet}")
    return CanaryResult(True, str(text))
