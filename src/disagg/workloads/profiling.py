"""A recipe's `profiling:` on the benchmark side, as srtctl v1.0.68's benchmark scripts do it.

srtctl's sa-bench and trace-replay scripts (`benchmarks/scripts/lib/profiling.sh`) POST
`/start_profile` (`/engine/start_profile` under Dynamo) to each prefill, decode, then
aggregated leader before the first concurrency's warm-up, and `/stop_profile` after the
last; their environment names the profile type, steps and leaders. disagg makes the
same POSTs at the same moments around its own points; where it differs (a failed start,
TRT-LLM, Dynamo 1.x's route) is in docs/compat.md. Every POST is recorded; a failed stop
is only a warning, since SGLang answers 500 once a profile took its steps and ended.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal

from disagg.errors import Fail
from disagg.plan.container_paths import RUN_DIR_INSIDE, in_container
from disagg.plan.model import BenchPlan, Plan, ProfileTarget, ProfilingPlan, RoleKind
from disagg.plan.profiling import (
    COMPAT_TORCH_DIR,
    MODES,
    PROFILES,
    enabled,
    phase,
    profiles_dir,
)
from disagg.plan.templates import substitute
from disagg.recipe.job_sections import ProfilingSection
from disagg.recipe.schema import FrontendSection, RecipeConfig

# Benchmarks disagg runs whose srtctl script sources profiling.sh.
POSTING_TYPES = ("sa-bench", "trace-replay")
ROUTER_FRONTENDS = ("sglang", "sglang-router", "smg")  # srtctl's `sglang`: its SGLang router
DEFAULT_STEPS = (0, 50)  # profiling_init_from_env's start and stop for an unset step
ACTIVITIES = {"torch": ["CPU", "GPU"], "nsys": ["CUDA_PROFILER"]}
DYNAMO_1X = "/engine/control/"  # where Dynamo 1.x serves its engine routes
POST_TIMEOUT_S = 60.0
ANSWER_CHARS = 300
ENDED_ITSELF = "not in progress"  # SGLang's answer to a stop once the profile took its steps
COMPAT = "profiling-failure"
COMPAT_TRTLLM = "profiling-trtllm"
COMPAT_DYNAMO = "profiling-dynamo-route"


def posting(config: RecipeConfig, bench_type: str) -> bool:
    """Whether srtctl's benchmark script POSTs start/stop for this variant (any engine)."""
    section = config.profiling
    return (
        section is not None
        and enabled(section)
        and section.type in ACTIVITIES
        and bench_type in POSTING_TYPES
        and not (bench_type == "trace-replay" and config.backend.type == "trtllm")
    )


def with_targets(
    bench: BenchPlan, plan: Plan, config: RecipeConfig, fail: Fail
) -> tuple[BenchPlan, list[str], str | None]:
    """The bench plan with the POSTs srtctl's benchmark makes, the compat rows that
    apply, and why a simulated run makes none (None when it does or nothing is asked)."""
    if not posting(config, bench.type):
        return bench, [], None
    section = config.profiling
    assert section is not None and section.type in ACTIVITIES
    if config.backend.type == "trtllm":
        return bench, [COMPAT_TRTLLM], None
    written = (config.frontend or FrontendSection()).type
    if written not in (*ROUTER_FRONTENDS, "dynamo"):
        raise fail(
            f"profiling with frontend type {written}: srtctl's benchmark sends the profile "
            "start to workers behind its sglang or dynamo frontend only, and stops with an "
            "error for any other",
            ("profiling", "type"),
            "profile behind `frontend.type: sglang` or `dynamo`, or drop `profiling:`",
        )
    router = plan.frontend in ROUTER_FRONTENDS  # a predicted run puts smg before Dynamo's roles
    if plan.simulated and not router:
        return bench, [], f"{plan.simulator or 'the simulator'} answers no profiling route"
    targets = []
    for kind in (RoleKind.PREFILL, RoleKind.DECODE, RoleKind.AGGREGATED):
        for role in plan.roles_of(kind):
            if role.name != f"{kind.value}-{role.index}":
                continue  # a data-parallel rank's own process: srtctl posts to the leader
            mode = MODES[kind]
            start, stop = _steps(section, mode, fail)
            inside = in_container(plan, role)
            base = f"${{{role.name}.url}}" if router else f"http://${{{role.name}.host}}:"
            path = "" if router else f"${{{role.name}.system_port}}/engine"
            targets.append(
                ProfileTarget(
                    role=role.name,
                    mode=mode,
                    start_url=f"{base}{path}/start_profile",
                    stop_url=f"{base}{path}/stop_profile",
                    output_dir=profiles_dir(mode, RUN_DIR_INSIDE if inside else "${run.dir}"),
                    start_step=start,
                    num_steps=stop - start,
                )
            )
    kind_of: Literal["nsys", "torch"] = "torch" if section.type == "torch" else "nsys"
    planned = ProfilingPlan(type=kind_of, activities=ACTIVITIES[kind_of], targets=targets)
    rows = [COMPAT] if router else [COMPAT, COMPAT_DYNAMO]
    return bench.model_copy(update={"profiling": planned}), rows, None


def planned(
    bench: BenchPlan, plan: Plan, config: RecipeConfig, fail: Fail
) -> tuple[BenchPlan, list[str], list[dict[str, str]]]:
    """A profiled variant's bench plan with its POSTs, the compat rows it hits, and the
    plan's `ignored` entry of a simulated run, which profiles nothing on a GPU."""
    bench, rows, none = with_targets(bench, plan, config, fail)
    section = config.profiling
    if section is not None and section.type == "torch" and not plan.simulated:
        rows.append(COMPAT_TORCH_DIR)
    if not plan.simulated:
        return bench, rows, []
    why = "simulated workers run no profiler and write no trace"
    if bench.profiling is not None:
        why += "; the benchmark's start/stop POSTs still reach them"
    elif none is not None:
        why += f"; {none}, so the benchmark POSTs no start/stop"
    return bench, rows, [{"field": "profiling.type", "action": "ignored", "why": why}]


def command_env(plan: Plan) -> dict[str, str]:
    """What srtctl gives every benchmark command of a profiled job (`_get_benchmark_
    profiling_env`): type, steps, torch's directory, each mode's leaders' `host:port` (the
    system port under Dynamo), TRT-LLM's backend; {} when not profiled."""
    raw = plan.config.get("profiling")
    section = ProfilingSection.model_validate(raw) if isinstance(raw, dict) else None
    if section is None or not enabled(section):
        return {}
    env: dict[str, str] = {"PROFILE_TYPE": section.type}
    for mode in ("prefill", "decode", "agg"):
        steps = phase(section, mode)
        if steps is None:
            continue
        for name, step in (("START", steps.start_step), ("STOP", steps.stop_step)):
            if step is not None:
                env[f"PROFILE_{mode.upper()}_{name}_STEP"] = str(step)
    if section.type == "torch":
        env["SGLANG_TORCH_PROFILER_DIR"] = f"${{run.dir}}/{PROFILES}"
    for kind, mode in MODES.items():
        leaders = [r for r in plan.roles_of(kind) if r.name == f"{kind.value}-{r.index}"]
        if not leaders:
            continue
        port = "system" if plan.frontend == "dynamo" and not plan.simulated else "http"
        hosts = [f"${{{r.name}.host}}" for r in leaders]
        env[f"PROFILE_{mode.upper()}_IPS"] = ",".join(hosts)
        ports = [f"${{{r.name}.{port}_port}}" for r in leaders]
        env[f"PROFILE_{mode.upper()}_ENDPOINTS"] = ",".join(
            f"{host}:{p}" for host, p in zip(hosts, ports, strict=True)
        )
    if plan.backend == "trtllm":
        env["PROFILING_BACKEND"] = "trtllm"
    return env


def _steps(section: ProfilingSection, mode: str, fail: Fail) -> tuple[int, int]:
    steps = phase(section, mode)
    start = steps.start_step if steps and steps.start_step is not None else DEFAULT_STEPS[0]
    stop = steps.stop_step if steps and steps.stop_step is not None else DEFAULT_STEPS[1]
    if stop <= start:
        name = "aggregated" if mode == "agg" else mode
        raise fail(
            f"profiling.{name}: stop_step {stop} is not after start_step {start} (an unset "
            f"step is {DEFAULT_STEPS[0]} and {DEFAULT_STEPS[1]}), so no step would be profiled; "
            "srtctl's benchmark skips this worker's profile with a warning",
            ("profiling", name),
            "set stop_step after start_step",
        )
    return start, stop


def rendered(bench: BenchPlan, bindings: dict[str, dict[str, str]]) -> BenchPlan:
    """The bench plan with the targets' URLs and output directories bound to this run."""
    if bench.profiling is None:
        return bench

    def bound(text: str) -> str:
        return substitute(text, bindings, self_name="bench")

    targets = [
        t.model_copy(
            update={
                "start_url": bound(t.start_url),
                "stop_url": bound(t.stop_url),
                "output_dir": bound(t.output_dir),
            }
        )
        for t in bench.profiling.targets
    ]
    profiling = bench.profiling.model_copy(update={"targets": targets})
    return bench.model_copy(update={"profiling": profiling})


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST `body` as JSON to `url`: what was sent and how it was answered (never raises)."""
    import urllib.error  # here: planning reads this module, and needs no HTTP client
    import urllib.request

    data = json.dumps(body).encode()
    record: dict[str, Any] = {"url": url, "body": body, "at": round(time.time(), 3)}
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=POST_TIMEOUT_S) as response:
            answer = response.read(ANSWER_CHARS).decode(errors="replace")
            record.update(status=response.status, ok=True, answer=answer)
    except urllib.error.HTTPError as exc:
        answer = exc.read()[:ANSWER_CHARS].decode(errors="replace")
        record.update(status=exc.code, ok=False, answer=answer)
    except (OSError, ValueError) as exc:
        record.update(status=None, ok=False, answer=str(exc))
    return record


def described(record: dict[str, Any]) -> str:
    """`POST URL -> HTTP 404: answer` (or the connection error), for logs and reasons."""
    status = f"HTTP {record['status']}" if record["status"] is not None else "failed"
    answer = " ".join(str(record["answer"]).split())
    return f"POST {record['url']} -> {status}" + (f": {answer}" if answer else "")


class Profiles:
    """The run's profiles: `start` before the first point, `stop` after the last.

    `posts` keeps every POST made with its answer; `started` the targets whose start was
    answered with success, which are the ones stopped.
    """

    def __init__(self, plan: ProfilingPlan) -> None:
        self.plan = plan
        self.posts: list[dict[str, Any]] = []
        self.started: list[ProfileTarget] = []

    def _post(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        record = post(url, body)
        self.posts.append(record)
        if record["status"] == 404 and "/engine/" in url and DYNAMO_1X not in url:
            record = post(url.replace("/engine/", DYNAMO_1X, 1), body)
            self.posts.append(record)
        return record

    def start(self) -> tuple[ProfileTarget, str] | None:
        """Start a profile on every target; the first that failed and why, or None."""
        failed: tuple[ProfileTarget, str] | None = None
        for target in self.plan.targets:
            body = {
                "output_dir": target.output_dir,
                "start_step": target.start_step,
                "num_steps": target.num_steps,
                "activities": list(self.plan.activities),
            }
            record = self._post(target.start_url, body)
            if record["ok"]:
                self.started.append(target)
            elif failed is None:
                failed = (target, described(record))
        return failed

    def stop(self) -> list[str]:
        """Stop the profile of every target started; what each failed stop answered."""
        problems = []
        for target in self.started:
            record = self._post(target.stop_url, {})
            if not record["ok"]:
                problems.append(f"{target.role}: {described(record)}")
        self.started = []
        return problems

    @property
    def start_posts(self) -> list[dict[str, Any]]:
        """The start POSTs made (what each measured point was profiled under)."""
        urls = {t.start_url for t in self.plan.targets}
        urls |= {u.replace("/engine/", DYNAMO_1X, 1) for u in urls if "/engine/" in u}
        return [p for p in self.posts if p["url"] in urls]
