"""`mooncake-router` with a named `mooncake_workload`: AIPerf replaying a Mooncake trace,
as srtctl runs it.

srtctl fetches the named FAST'25 trace, warms up with a short AIPerf run (10 concurrent,
20 requests), then runs `aiperf profile` on the trace (`mooncake_trace`, fixed schedule,
streaming, seed 42, goodput TTFT 2000 ms / ITL 25 ms unless set); disagg renders the
same calls in the bench role. AIPerf is not installed with disagg: without `aiperf` the
run ends at once saying so (compat row `mooncake-router`). Its artifacts stay in the run
directory, not turned into judged points. With `trace_file:` disagg replays that file
with its own generator (`disagg.workloads.trace`) instead.
"""

from __future__ import annotations

from typing import ClassVar

from disagg.plan.model import BenchCommand, BenchPlan
from disagg.workloads.base import BenchInputs, command_plan
from disagg.workloads.contract import ENDPOINT, RESULTS_DIR
from disagg.workloads.trace import TraceReplay

WORKLOADS = ("mooncake", "conversation", "synthetic", "toolagent")
TRACES = "https://raw.githubusercontent.com/kvcache-ai/Mooncake/main/FAST25-release"

# `bash -c WRAPPER mooncake-router ENDPOINT MODEL WORKLOAD TTFT ITL TOKENIZER`
WRAPPER = f"""set -u
endpoint=$1 model=$2 workload=$3 ttft=$4 itl=$5 tokenizer=$6
if ! command -v aiperf >/dev/null 2>&1; then
  echo "benchmark mooncake-router: aiperf is not installed in the bench role's environment" \\
       "(srtctl pip-installs it there; disagg does not install packages in a job)." \\
       "Nothing was measured." >&2
  exit 3
fi
out=${{DISAGG_RESULTS_DIR:?}}
mkdir -p "$out/traces" "$out/artifacts"
case $workload in
  mooncake) url={TRACES}/arxiv-trace/mooncake_trace.jsonl ;;
  *) url={TRACES}/traces/${{workload}}_trace.jsonl ;;
esac
trace="$out/traces/${{workload}}_trace.jsonl"
if [ ! -f "$trace" ]; then
  curl -fsSL -o "$trace.part" "$url" && mv "$trace.part" "$trace" || {{
    echo "benchmark mooncake-router: cannot fetch the $workload trace from $url" >&2; exit 4; }}
fi
metrics=()
if [ -n "${{AIPERF_SERVER_METRICS_URLS:-}}" ]; then
  IFS=, read -r -a urls <<< "$AIPERF_SERVER_METRICS_URLS"
  metrics=(--server-metrics "${{urls[@]}}")
fi
aiperf profile -m "$model" --tokenizer "$tokenizer" --url "$endpoint" --streaming \\
  --ui simple --concurrency 10 --request-count 20 || exit $?
run="$out/artifacts/${{model##*/}}_${{workload}}_$(date '+%Y%m%d_%H%M%S')"
mkdir -p "$run"
aiperf profile -m "$model" --tokenizer "$tokenizer" --input-file "$trace" \\
  --custom-dataset-type mooncake_trace --fixed-schedule --url "$endpoint" --streaming \\
  --random-seed 42 --ui simple --artifact-dir "$run" "${{metrics[@]}}" \\
  --goodput "time_to_first_token:$ttft inter_token_latency:$itl"
"""


class MooncakeRouter(TraceReplay):
    types = ("mooncake-router",)
    reads = TraceReplay.reads | {"mooncake_workload", "container_image"}
    ignores: ClassVar[dict[str, str]] = {
        **TraceReplay.ignores,
        "aiperf_package": "srtctl's mooncake-router script installs plain `aiperf` when "
        "missing and never reads this spec",
        "aiperf_args": "srtctl appends them to its mooncake-router script's arguments, "
        "which the script does not pass to AIPerf",
    }
    differs = ("mooncake-router",)

    def plan(self, inputs: BenchInputs) -> BenchPlan:
        b = inputs.section
        if b.trace_file is not None:  # a local trace: disagg's own replay
            planned = super().plan(inputs)
            planned.ignored.pop("aiperf_args", None)
            return planned
        ignored = self.check_fields(inputs)
        workload = b.mooncake_workload or "conversation"
        if workload not in WORKLOADS:
            raise inputs.fail(
                f"benchmark.mooncake_workload must be one of {', '.join(WORKLOADS)}, "
                f"got {workload!r}",
                ("benchmark", "mooncake_workload"),
                None,
            )
        ttft = b.ttft_threshold_ms or 2000
        itl = b.itl_threshold_ms or 25
        for name, value in (("ttft_threshold_ms", ttft), ("itl_threshold_ms", itl)):
            if value <= 0:
                raise inputs.fail(f"benchmark.{name} must be positive", ("benchmark", name), None)
        argv = ["bash", "-c", WRAPPER, "mooncake-router", ENDPOINT, inputs.model_name]
        argv += [workload, str(ttft), str(itl), "${model.path}"]
        return command_plan(
            inputs,
            BenchCommand(
                argv=argv,
                results_dir=RESULTS_DIR,
                env={"AIPERF_HTTP_SO_RCVTIMEO": "120"},
                container_image=inputs.image(),
                expects_results=False,
            ),
            ignored,
        )

    def prepare(self, bench: BenchPlan) -> None:
        if bench.trace is not None:
            super().prepare(bench)
